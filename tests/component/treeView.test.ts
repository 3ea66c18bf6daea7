/**
 * The MARTI search-tree view (renderer/src/components/TreeView.svelte, TreeExplorer.svelte) on recorded tree records
 * (tests/fixtures/marti-trees.jsonl), in headless Chromium: one marker per node in the agent's shape and the score's
 * colour, an edge per refinement, a node's details on selection, the timeline, keyboard moves, new trees arriving
 * while the explorer is open, and a tree of the step in flight growing in place until its final record replaces it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium, openHarness, readFixture, type Harness } from './harness';
import { agentMarker, layoutTree, scoreColour, type MartiTreeRecord } from '../../renderer/src/lib/trajectories';

const trees = readFixture('marti-trees.jsonl') as unknown as MartiTreeRecord[];

let h: Harness;

/** The tree with the most refinements (depth > 1), then the most nodes. */
const deepest = [...trees].sort(
  (a, b) =>
    b.nodes.filter((n) => n.depth > 1).length - a.nodes.filter((n) => n.depth > 1).length ||
    b.nodes.length - a.nodes.length,
)[0]!;

describe.skipIf(!haveChromium)('search-tree view (recorded MARTI trees)', () => {
  beforeAll(async () => {
    h = await openHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('the fixture is what the tests need: trees by two agents with refinements and programs', () => {
    expect(trees.length).toBeGreaterThanOrEqual(2);
    expect(new Set(trees.flatMap((t) => t.nodes.map((n) => n.agent)).filter(Boolean)).size).toBe(2);
    expect(deepest.nodes.some((n) => n.depth > 1)).toBe(true);
    expect(trees.some((t) => t.nodes.some((n) => n.program !== null))).toBe(true);
    // the layout places every node exactly once
    const placed = layoutTree(deepest.nodes).placed;
    expect(placed.map((p) => p.node.id).sort((a, b) => a - b)).toEqual(
      deepest.nodes.map((n) => n.id).sort((a, b) => a - b),
    );
  });

  it('draws every node with its agent’s marker and its score’s colour, and an edge per parent link', async () => {
    await h.mount('TreeView', { tree: deepest });
    const nodes = h.page.getByTestId('tree-node');
    await expect.poll(() => nodes.count()).toBe(deepest.nodes.length);
    const drawn = await nodes.evaluateAll((els) =>
      els.map((el) => ({
        id: Number(el.getAttribute('data-node-id')),
        agent: el.getAttribute('data-agent'),
        fill: el.querySelector('circle:not(.halo), rect, polygon')?.getAttribute('fill') ?? null,
        shape: el.querySelector('circle:not(.halo), rect, polygon')?.tagName ?? null,
      })),
    );
    for (const n of deepest.nodes) {
      const d = drawn.find((x) => x.id === n.id)!;
      expect(d.agent).toBe(n.agent ?? '');
      if (n.parentId !== null) {
        expect(d.fill).toBe(scoreColour(n.score));
        const marker = agentMarker(deepest.agents, n.agent);
        expect(d.shape).toBe(marker === 'circle' ? 'circle' : marker === 'square' ? 'rect' : 'polygon');
      }
    }
    // two agents, two different shapes
    const shapes = new Set(deepest.nodes.filter((n) => n.agent).map((n) => agentMarker(deepest.agents, n.agent)));
    expect(shapes.size).toBe(new Set(deepest.nodes.map((n) => n.agent).filter(Boolean)).size);
    expect(await h.page.getByTestId('tree-edge').count()).toBe(deepest.nodes.length - 1);
    expect(await h.page.locator('[data-testid="tree-edge"]:not(.fresh)').count()).toBe(
      deepest.nodes.filter((n) => n.depth > 1).length,
    );
    await h.shot('tree-view');
    expect(h.errors).toEqual([]);
  });

  it('selecting a node shows its program, feedback, public and private results, advantage and prompt', async () => {
    await h.mount('TreeView', { tree: deepest });
    for (const n of deepest.nodes.filter((x) => x.parentId !== null)) {
      await h.page.locator(`[data-testid="tree-node"][data-node-id="${n.id}"]`).click();
      const detail = h.page.getByTestId('node-detail');
      await expect.poll(() => detail.locator('h4').textContent()).toContain(`Node ${n.id}`);
      expect(await detail.getByTestId('node-program').textContent()).toBe(n.program ?? n.completion ?? '');
      expect(await detail.getByTestId('node-feedback').textContent()).toBe(n.feedback ?? '–');
      expect(await detail.getByTestId('node-prompt').textContent()).toBe(n.prompt ?? '–');
      expect(await detail.getByTestId('node-public').textContent()).toBe(
        `${n.public!.passed} / ${n.public!.total} passed`,
      );
      expect(await detail.getByTestId('node-private').textContent()).toContain(
        `${n.private!.passed} / ${n.private!.total} passed`,
      );
      const adv = await detail.getByTestId('node-advantage').textContent();
      if (n.advantage === null) expect(adv).toContain('–');
      else expect(adv).toContain(Number.isInteger(n.advantage) ? String(n.advantage) : n.advantage.toFixed(3));
    }
    const refined = deepest.nodes.find((n) => n.depth > 1)!;
    await h.page.locator(`[data-testid="tree-node"][data-node-id="${refined.id}"]`).click();
    expect(await h.page.getByTestId('node-detail').textContent()).toContain(`a refinement of node ${refined.parentId}`);
    await h.shot('tree-view-selected');
    expect(h.errors).toEqual([]);
  });

  it('the timeline at k shows exactly the first k expansions (and the root)', async () => {
    await h.mount('TreeView', { tree: deepest });
    const slider = h.page.getByTestId('tree-timeline');
    const expansions = deepest.nodes.length - 1;
    expect(await slider.getAttribute('max')).toBe(String(expansions));
    for (let k = 0; k <= expansions; k++) {
      await slider.fill(String(k));
      await expect.poll(() => h.page.locator('[data-testid="tree-node"]:not([data-root])').count()).toBe(k);
      const ids = await h.page
        .locator('[data-testid="tree-node"]:not([data-root])')
        .evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-node-id'))).sort((a, b) => a - b));
      expect(ids).toEqual(Array.from({ length: k }, (_, i) => i + 1));
      expect(await h.page.locator('[data-testid="tree-node"][data-root]').count()).toBe(1);
      expect(await h.page.getByTestId('tree-timeline-text').textContent()).toContain(`${k} of ${expansions}`);
      if (k === Math.ceil(expansions / 2)) await h.shot('tree-view-timeline');
    }
    // keyboard on the slider: Home goes back to no expansion
    await slider.focus();
    await h.page.keyboard.press('Home');
    await expect.poll(() => h.page.locator('[data-testid="tree-node"]:not([data-root])').count()).toBe(0);
    // replay runs to the end
    await h.page.getByTestId('tree-play').click();
    await expect
      .poll(() => h.page.locator('[data-testid="tree-node"]:not([data-root])').count(), {
        timeout: 600 * expansions + 5000,
      })
      .toBe(expansions);
    expect(h.errors).toEqual([]);
  });

  it('keyboard: Tab to the root, ↓ to its first child, → to the next sibling, ↑ back to the parent', async () => {
    await h.mount('TreeView', { tree: deepest });
    await h.page.locator('[data-testid="tree-node"][data-root]').focus();
    await h.page.keyboard.press('ArrowDown');
    const rootKids = deepest.nodes.filter((n) => n.parentId === 0).sort((a, b) => a.id - b.id);
    await expect
      .poll(() => h.page.locator('[data-testid="tree-node"][aria-selected="true"]').getAttribute('data-node-id'))
      .toBe(String(rootKids[0]!.id));
    if (rootKids.length > 1) {
      await h.page.keyboard.press('ArrowRight');
      await expect
        .poll(() => h.page.locator('[data-testid="tree-node"][aria-selected="true"]').getAttribute('data-node-id'))
        .not.toBe(String(rootKids[0]!.id));
    }
    await h.page.keyboard.press('ArrowUp');
    await expect
      .poll(() => h.page.locator('[data-testid="tree-node"][aria-selected="true"]').getAttribute('data-node-id'))
      .toBe('0');
    expect(h.errors).toEqual([]);
  });

  it('a growing tree (live.json) gains nodes in place, keeps the selected node, and gives way to its final record', async () => {
    const final = deepest;
    const total = final.nodes.length - 1;
    const other = trees.find((t) => t.treeId !== final.treeId)!;
    // what the run loop reports after round k: the first k expansions, not trained yet
    const growing = (k: number): MartiTreeRecord => ({
      ...final,
      live: true,
      budget: total,
      nodes: final.nodes.slice(0, k + 1).map((n) => ({ ...n, advantage: null, shapedReward: null, trained: false })),
    });
    const view = h.page.getByTestId('tree-view');
    await h.mount('TreeExplorer', { trees: [other, growing(1)] });
    await expect.poll(() => view.getAttribute('data-tree')).toBe(final.treeId);
    expect(await view.getAttribute('data-live')).toBe('true');
    expect(await view.getAttribute('data-nodes')).toBe('1');
    expect(await h.page.getByTestId('tree-growing').textContent()).toContain(`1 of ${total} nodes`);
    expect(
      await h.page.locator(`[data-testid="tree-item"][data-key="${final.step}|${final.treeId}"]`).textContent(),
    ).toContain(`growing 1 of ${total} nodes`);
    await h.page.locator('[data-testid="tree-node"][data-node-id="1"]').click();
    await h.update({ trees: [other, growing(2)] });
    await expect.poll(() => view.getAttribute('data-nodes')).toBe('2');
    expect(await h.page.locator('[data-testid="tree-node"]:not([data-root])').count()).toBe(2);
    expect(await h.page.getByTestId('tree-growing').textContent()).toContain(`2 of ${total} nodes`);
    // the same tree, grown in place: the selected node is still selected
    expect(await h.page.locator('[data-testid="tree-node"][aria-selected="true"]').getAttribute('data-node-id')).toBe(
      '1',
    );
    await h.shot('tree-explorer-growing');
    await h.update({ trees: [other, final] });
    await expect.poll(() => view.getAttribute('data-live')).toBe('false');
    expect(await view.getAttribute('data-nodes')).toBe(String(total));
    expect(await h.page.getByTestId('tree-growing').count()).toBe(0);
    expect(await h.page.locator('[data-testid="tree-node"]:not([data-root])').count()).toBe(total);
    expect(await h.page.locator('[data-testid="tree-node"][aria-selected="true"]').getAttribute('data-node-id')).toBe(
      '1',
    );
    expect(await h.page.getByTestId('tree-item').count()).toBe(2);
    expect(h.errors).toEqual([]);
  });

  it('an evaluation tree (no step) says where it comes from instead of "step"', async () => {
    const { step: _step, ...evalTree } = deepest;
    await h.mount('TreeView', {
      tree: { ...evalTree, mode: 'eval' },
      origin: 'evaluation of the checkpoint at step 20',
    });
    const facts = h.page.locator('[data-testid="tree-view"] .facts');
    await expect.poll(() => facts.textContent()).toContain('evaluation of the checkpoint at step 20 · tree');
    await h.mount('TreeView', { tree: { ...evalTree, mode: 'eval' } });
    await expect.poll(() => facts.textContent()).toMatch(/^\s*tree /);
    expect(await facts.textContent()).not.toContain('step');
    expect(h.errors).toEqual([]);
  });

  it('the explorer follows new trees as they arrive, and keeps a chosen one when told to', async () => {
    await h.mount('TreeExplorer', { trees: trees.slice(0, 1) });
    await expect.poll(() => h.page.getByTestId('tree-view').getAttribute('data-tree')).toBe(trees[0]!.treeId);
    await h.update({ trees: trees.slice(0, 2) });
    await expect.poll(() => h.page.getByTestId('tree-item').count()).toBe(2);
    await expect.poll(() => h.page.getByTestId('tree-view').getAttribute('data-tree')).toBe(trees[1]!.treeId);
    // choosing a tree stops following
    await h.page.locator(`[data-testid="tree-item"][data-key="${trees[0]!.step}|${trees[0]!.treeId}"]`).click();
    await expect.poll(() => h.page.getByTestId('tree-view').getAttribute('data-tree')).toBe(trees[0]!.treeId);
    expect(await h.page.getByTestId('tree-follow').isChecked()).toBe(false);
    await h.update({ trees });
    await expect.poll(() => h.page.getByTestId('tree-item').count()).toBe(trees.length);
    expect(await h.page.getByTestId('tree-view').getAttribute('data-tree')).toBe(trees[0]!.treeId);
    await h.shot('tree-explorer');
    expect(h.errors).toEqual([]);
  });
});
