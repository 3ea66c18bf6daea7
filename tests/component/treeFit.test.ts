/**
 * The MARTI tree view where space is short and trees keep coming (issue 19): at 700 px (a Compare column) the whole
 * tree is visible, nothing clipped or overflowing; the newest expansion carries a marker that is not a score colour,
 * explained in the legend; and "follow new trees" never takes away a tree whose node the reader selected: newer trees
 * are announced instead, one click away.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium, openHarness, readFixture, type Harness } from './harness';
import { layoutTree, scoreColour, type MartiTreeRecord } from '../../renderer/src/lib/trajectories';

const trees = readFixture('marti-trees.jsonl') as unknown as MartiTreeRecord[];
/** The widest tree (most leaves). */
const widest = [...trees].sort((a, b) => layoutTree(b.nodes).columns - layoutTree(a.nodes).columns)[0]!;

let h: Harness;

describe.skipIf(!haveChromium)('tree view: fit, newest marker, following', () => {
  beforeAll(async () => {
    h = await openHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('fits a 700 px container: every node visible, nothing wider than the container', async () => {
    expect(layoutTree(widest.nodes).columns).toBeGreaterThanOrEqual(6);
    await h.page.evaluate(() => {
      const root = (
        globalThis as unknown as { document: { getElementById(id: string): { style: Record<string, string> } } }
      ).document.getElementById('root');
      root.style['width'] = '700px';
      root.style['border'] = '1px solid #888';
    });
    await h.mount('TreeView', { tree: widest });
    await expect.poll(() => h.page.getByTestId('tree-node').count()).toBe(widest.nodes.length);
    const box = await h.page.evaluate(() => {
      type El = {
        getBoundingClientRect(): { left: number; right: number; top: number; bottom: number };
        scrollWidth: number;
        clientWidth: number;
      };
      const d = (
        globalThis as unknown as { document: { querySelector(s: string): El; querySelectorAll(s: string): El[] } }
      ).document;
      const root = d.querySelector('#root').getBoundingClientRect();
      const view = d.querySelector('[data-testid="tree-view"]');
      const canvas = d.querySelector('[data-testid="tree-svg"]').getBoundingClientRect();
      const frame = d.querySelector('.canvas');
      const nodes = [...d.querySelectorAll('[data-testid="tree-node"]')].map((n) => n.getBoundingClientRect());
      const detail = d.querySelector('[data-testid="node-detail"]').getBoundingClientRect();
      return {
        root,
        viewScroll: view.scrollWidth,
        viewClient: view.clientWidth,
        frameScroll: frame.scrollWidth,
        frameClient: frame.clientWidth,
        canvas,
        nodes,
        detail,
      };
    });
    expect(box.viewScroll).toBeLessThanOrEqual(box.viewClient);
    expect(box.frameScroll).toBeLessThanOrEqual(box.frameClient);
    expect(box.canvas.right).toBeLessThanOrEqual(box.root.right + 0.5);
    for (const n of box.nodes) {
      expect(n.left).toBeGreaterThanOrEqual(box.root.left - 0.5);
      expect(n.right).toBeLessThanOrEqual(box.root.right + 0.5);
    }
    expect(box.detail.right).toBeLessThanOrEqual(box.root.right + 0.5);
    await h.shot('tree-view-700px');
    await h.page.evaluate(() => {
      const root = (
        globalThis as unknown as { document: { getElementById(id: string): { style: Record<string, string> } } }
      ).document.getElementById('root');
      root.style['width'] = '';
      root.style['border'] = '';
    });
    expect(h.errors).toEqual([]);
  });

  it('marks the newest expansion with a dashed ring, not a score colour, and explains it in the legend', async () => {
    await h.mount('TreeView', { tree: widest });
    const marker = h.page.getByTestId('newest-marker');
    await expect.poll(() => marker.count()).toBe(1);
    const last = Math.max(...widest.nodes.map((n) => n.id));
    expect(
      await h.page.locator(`[data-testid="tree-node"][data-node-id="${last}"] [data-testid="newest-marker"]`).count(),
    ).toBe(1);
    const style = await marker.evaluate((el) => {
      const cs = (
        globalThis as unknown as {
          getComputedStyle(e: unknown): { strokeDasharray: string; stroke: string; fill: string };
        }
      ).getComputedStyle(el);
      return { dash: cs.strokeDasharray, stroke: cs.stroke, fill: cs.fill };
    });
    expect(style.dash).not.toBe('none');
    expect(style.fill).toBe('none');
    const scoreColours = await h.page.evaluate(
      (cs) => cs,
      [0, 0.5, 1].map((s) => scoreColour(s)),
    );
    expect(scoreColours).not.toContain(style.stroke);
    expect(await h.page.getByTestId('legend-newest').textContent()).toContain('newest expansion');
    // the timeline moves it: at k = 3 the ring is on node 3
    await h.page.getByTestId('tree-timeline').fill('3');
    await expect
      .poll(() => h.page.locator('[data-testid="tree-node"][data-node-id="3"] [data-testid="newest-marker"]').count())
      .toBe(1);
    expect(h.errors).toEqual([]);
  });

  it('following new trees does not replace a tree whose node the reader selected; newer trees are announced', async () => {
    await h.mount('TreeExplorer', { trees: trees.slice(0, 2) });
    const shown = (): Promise<string | null> => h.page.getByTestId('tree-view').getAttribute('data-tree');
    await expect.poll(shown).toBe(trees[1]!.treeId);
    expect(await h.page.getByTestId('tree-follow').isChecked()).toBe(true);
    // the reader selects a node of the followed tree
    const node = trees[1]!.nodes.find((n) => n.parentId !== null)!;
    await h.page.locator(`[data-testid="tree-node"][data-node-id="${node.id}"]`).click();
    await expect.poll(() => h.page.getByTestId('node-detail').locator('h4').textContent()).toContain(`Node ${node.id}`);
    // new trees arrive
    await h.update({ trees });
    await expect.poll(() => h.page.getByTestId('tree-item').count()).toBe(trees.length);
    expect(await shown()).toBe(trees[1]!.treeId);
    expect(await h.page.getByTestId('node-detail').locator('h4').textContent()).toContain(`Node ${node.id}`);
    await expect.poll(() => h.page.getByTestId('tree-newer').textContent()).toContain('2 newer trees arrived');
    await h.shot('tree-explorer-newer');
    // one click shows the newest and follows again
    await h.page.getByTestId('tree-show-newest').click();
    await expect.poll(shown).toBe(trees.at(-1)!.treeId);
    expect(await h.page.getByTestId('tree-follow').isChecked()).toBe(true);
    expect(await h.page.getByTestId('tree-newer').count()).toBe(0);
    expect(h.errors).toEqual([]);
  });
});
