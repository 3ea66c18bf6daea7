/**
 * The Trees tab of a martipy run's page (issue 31 item 7, issue 33) in a real headless Chromium against web mode, on a
 * run folder written without training (tests/helpers/martipyRunFixture.ts: the recorded code-tree fixtures as two
 * steps' `code.tree` records). The tab is offered for a martipy run and opens on the newest step; it lists the step's
 * trees with each node's verdict and advantage, marks a tree whose nodes all scored alike; the chosen tree is drawn
 * as the Code trees view draws one: a node's program highlighted as Python, its failing test's error, and its
 * advantage; older steps open from the tab or the address (`?step=N`). Needs the built renderer.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/chromium';
import { writeMartipyRun, type CodeTreeLineWithStep } from '../helpers/martipyRunFixture';
import { openWebUi, type WebUi } from '../helpers/webUi';

let home: string;
let ui: WebUi;
let runId = '';
let steps: Map<number, CodeTreeLineWithStep[]>;

/** A number as the app writes it (lib/format.ts num), for the advantages here (none below 0.001 but 0). */
const fmt = (x: number, digits: number): string => (Number.isInteger(x) ? String(x) : x.toFixed(digits));
/** An advantage as the tab's chips write it (two decimals, signed). */
const chip = (x: number): string => `${x > 0 ? '+' : ''}${fmt(x, 2)}`;

beforeAll(async () => {
  if (!haveChromium) return;
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-martipy-trees-e2e-'));
  ({ runId, steps } = writeMartipyRun(home));
  ui = await openWebUi(home);
}, 120_000);

afterAll(async () => {
  await ui?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

describe.skipIf(!haveChromium)('the Trees tab of a martipy run', () => {
  it('opens on the newest step: its trees with each node’s verdict and advantage', async () => {
    const { page, server } = ui;
    await page.goto(`${server.url}#/run/${runId}`);
    await page.getByTestId('tab-codetrees').click();
    await page.getByTestId('code-trees-tab').waitFor();
    expect(await page.getByTestId('tab-codetrees').textContent()).toBe('Trees');
    await expect.poll(() => page.getByTestId('code-trees-step').textContent()).toBe('Step 2');
    const newest = steps.get(2)!;
    expect(await page.getByTestId('run-code-tree').evaluateAll((els) => els.map((e) => e.dataset.task))).toEqual(
      newest.map((t) => t.task_id),
    );
    for (const [i, tree] of newest.entries()) {
      const chips = page.getByTestId('run-code-tree').nth(i).getByTestId('node-advantage-chip');
      expect((await chips.allTextContents()).map((t) => t.trim())).toEqual(
        tree.nodes.map((n) => `${n.id}${n.passed ? '✓' : '✗'}${chip(n.advantage)}`),
      );
    }
    // T+ refinements pass where their parents failed: every tree of step 2 has a signal
    expect(newest.every((t) => t.nodes.some((n) => n.advantage !== 0))).toBe(true);
    expect(await page.getByText('all alike: no signal').count()).toBe(0);
    expect(await page.getByTestId('tree-view').getAttribute('data-nodes')).toBe(String(newest[0]!.nodes.length));
    expect(ui.pageErrors).toEqual([]);
  });

  it('draws the chosen tree: a failing node’s program, its test’s error and its advantage', async () => {
    const { page, server } = ui;
    await page.goto(`${server.url}#/run/${runId}/codetrees`);
    const tree = steps.get(2)!.find((t) => t.format === 'humaneval' && t.task_id === 'HumanEval/2')!;
    const failing = tree.nodes.find((n) => !n.passed && n.program !== null)!;
    expect(failing.advantage).toBeLessThan(0);
    await page.locator(`[data-testid="run-code-tree"][data-task="${tree.task_id}"]`).click();
    await expect.poll(() => page.getByTestId('tree-statement').textContent()).toContain('truncate_number');
    await page.locator(`[data-testid="tree-node"][data-node-id="${failing.id}"]`).click();
    const program = page.getByTestId('node-program');
    await program.waitFor();
    expect(await program.getAttribute('data-lang')).toBe('python');
    expect(await program.textContent()).toBe(failing.program!.replace(/\n$/, ''));
    expect(await program.locator('.hljs-keyword').allTextContents()).toEqual(expect.arrayContaining(['def', 'return']));
    const error = await page.getByTestId('code-test-error').textContent();
    expect(error).toContain(failing.tests![0]!.error!);
    expect(error).toMatch(/AssertionError at assert candidate\(/);
    const advantage = await page.getByTestId('node-advantage').textContent();
    expect(advantage).toContain(fmt(failing.advantage, 3));

    // a refinement that passes: its advantage is positive, its diff against the failing parent shown
    const fix = tree.nodes.find((n) => n.parent === failing.id && n.passed)!;
    await page.locator(`[data-testid="tree-node"][data-node-id="${fix.id}"]`).click();
    await page.getByTestId('program-diff').waitFor();
    expect(await page.getByTestId('node-advantage').textContent()).toContain(fmt(fix.advantage, 3));
    expect(fix.advantage).toBeGreaterThan(0);
    expect(ui.pageErrors).toEqual([]);
  });

  it('opens an older step from the tab and from the address; a tree without signal is marked', async () => {
    const { page, server } = ui;
    await page.goto(`${server.url}#/run/${runId}/codetrees`);
    await expect.poll(() => page.getByTestId('code-trees-step').textContent()).toBe('Step 2');
    await page.getByTestId('code-trees-older').click();
    await expect.poll(() => page.getByTestId('code-trees-step').textContent()).toBe('Step 1');
    expect(page.url()).toContain(`#/run/${runId}/codetrees?step=1`);
    const first = steps.get(1)!;
    expect(await page.getByTestId('run-code-tree').evaluateAll((els) => els.map((e) => e.dataset.task))).toEqual(
      first.map((t) => t.task_id),
    );
    const silent = first.filter((t) => t.nodes.every((n) => n.advantage === 0));
    expect(silent.length).toBeGreaterThan(0);
    expect(silent.length).toBeLessThan(first.length);
    expect(await page.getByText('all alike: no signal').count()).toBe(silent.length);
    expect(await page.getByTestId('code-trees-older').isDisabled()).toBe(true);

    await page.goto(`${server.url}#/run/${runId}`);
    await page.getByTestId('run-view').waitFor();
    await page.goto(`${server.url}#/run/${runId}/codetrees?step=2`);
    await expect.poll(() => page.getByTestId('code-trees-step').textContent()).toBe('Step 2');
    expect(await page.getByTestId('code-trees-newer').isDisabled()).toBe(true);
    expect(ui.pageErrors).toEqual([]);
  });
});
