/**
 * The Code trees view (issue 31, item 7) in a real headless Chromium against web mode: the folders `mars-lab code tree
 * --out` wrote (the recorded fixtures of tests/fixtures/code-trees/, real sandbox verdicts) copied into a temporary
 * home's code-trees/. The view lists them; a problem's tree is drawn; a node shows its program with Python
 * highlighting (keywords, comments and strings in their own spans), each test's outcome with a failing test's error and
 * the line that raised it, and a refinement's added and removed lines against its parent's program. A folder opened by
 * its path must lie in the allowed folders; one outside is refused in the view with the host's reason. From Launch,
 * "Grow code trees of Python" checks a task file as it is typed (its problems, or why not) and grows trees with an
 * endpoint (a scripted one on loopback) into a folder the view then lists and opens, and a tree whose endpoint never
 * answers is stopped from the view (with bubblewrap only).
 * Needs the built renderer.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CodeTreeLine } from '../../engine/records/codeTree';
import { findExecutable } from '../../engine/code/sandbox/isolation';
import { haveChromium } from '../helpers/chromium';
import { DOUBLE_TASK, scriptedChatEndpoint } from '../helpers/scriptedChatEndpoint';
import { openWebUi, type WebUi } from '../helpers/webUi';

const FIXTURES = path.resolve('tests/fixtures/code-trees');
let home: string;
let outside: string;
let ui: WebUi;
let endpoint: Awaited<ReturnType<typeof scriptedChatEndpoint>> | undefined;

const linesOf = (folder: string, search: string): CodeTreeLine[] =>
  fs
    .readFileSync(path.join(FIXTURES, folder, `trees-${search}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as CodeTreeLine);

beforeAll(async () => {
  if (!haveChromium) return;
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-codetrees-e2e-'));
  outside = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-codetrees-outside-'));
  for (const name of ['humaneval-scripted', 'mbpp-scripted']) {
    fs.cpSync(path.join(FIXTURES, name), path.join(home, 'code-trees', name), { recursive: true });
  }
  fs.cpSync(path.join(FIXTURES, 'mbpp-scripted'), path.join(outside, 'mbpp'), { recursive: true });
  fs.writeFileSync(path.join(home, 'double.jsonl'), JSON.stringify(DOUBLE_TASK) + '\n');
  fs.writeFileSync(path.join(outside, 'double.jsonl'), JSON.stringify(DOUBLE_TASK) + '\n');
  endpoint = await scriptedChatEndpoint();
  ui = await openWebUi(home);
}, 120_000);

afterAll(async () => {
  await ui?.close();
  endpoint?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
  if (outside) fs.rmSync(outside, { recursive: true, force: true });
});

describe.skipIf(!haveChromium)('the Code trees view', () => {
  it('lists the folders of <home>/code-trees and draws a problem’s tree', async () => {
    const { page, server } = ui;
    await page.goto(`${server.url}#/code-trees`);
    await page.getByTestId('code-tree-folder').first().waitFor();
    expect(
      (await page.getByTestId('code-tree-folder').evaluateAll((els) => els.map((e) => e.dataset.name))).sort(),
    ).toEqual(['humaneval-scripted', 'mbpp-scripted']);
    await page.locator('[data-testid="code-tree-folder"][data-name="humaneval-scripted"]').click();
    await page.getByTestId('tree-view').waitFor();
    const plain = linesOf('humaneval-scripted', 'plain');
    expect(await page.getByTestId('code-problem').evaluateAll((els) => els.map((e) => e.dataset.task))).toEqual(
      plain.map((l) => l.task_id),
    );
    expect(await page.getByTestId('tree-view').getAttribute('data-nodes')).toBe(String(plain[0]!.nodes.length));
    expect(await page.locator('[data-testid="tree-node"]:not([data-root])').count()).toBe(plain[0]!.nodes.length);
  });

  it('shows a failing node’s program highlighted and its test’s error, and a refinement’s diff against its parent', async () => {
    const { page, server } = ui;
    const tree = linesOf('humaneval-scripted', 'tplus')[0]!;
    const failing = tree.nodes.find((n) => !n.passed && n.program !== null)!;
    const fix = tree.nodes.find((n) => n.parent === failing.id && n.passed)!;
    await page.goto(`${server.url}#/code-trees?dir=humaneval-scripted&search=tplus&problem=${tree.task_id}`);
    await page.getByTestId('tree-view').waitFor();
    expect(await page.getByTestId('code-search-tplus').isChecked()).toBe(true);

    await page.locator(`[data-testid="tree-node"][data-node-id="${failing.id}"]`).click();
    const program = page.getByTestId('node-program');
    await program.waitFor();
    expect(await program.getAttribute('data-lang')).toBe('python');
    const keywords = await program.locator('.hljs-keyword').allTextContents();
    expect(keywords).toEqual(expect.arrayContaining(['def', 'return']));
    expect(await program.locator('.hljs-comment').allTextContents()).toEqual(['# drop the integer part']);
    expect(await program.textContent()).toBe(failing.program!.replace(/\n$/, ''));
    const test = page.getByTestId('code-test');
    expect(await test.count()).toBe(1);
    expect(await test.getAttribute('data-passed')).toBe('false');
    const error = await page.getByTestId('code-test-error').textContent();
    expect(error).toContain(failing.tests![0]!.error!);
    expect(error).toContain(failing.tests![0]!.at!);
    expect(error).toMatch(/AssertionError at assert candidate\(/);
    // a fresh program has no parent program to differ from
    expect(await page.getByTestId('program-diff').count()).toBe(0);

    await page.locator(`[data-testid="tree-node"][data-node-id="${fix.id}"]`).click();
    await page.getByTestId('program-diff').waitFor();
    expect(await page.getByTestId('code-test').getAttribute('data-passed')).toBe('true');
    expect(await page.getByTestId('code-test-error').count()).toBe(0);
    const removed = await page.getByTestId('diff-removed').allTextContents();
    const added = await page.getByTestId('diff-added').allTextContents();
    expect(removed.map((t) => t.replace(/^−removed: /, ''))).toEqual([
      '    # drop the integer part',
      '    return number - 1',
    ]);
    expect(added.map((t) => t.replace(/^\+added: /, ''))).toEqual([
      '    # the decimal part is what is left after the integer part',
      '    return number - int(number)',
    ]);
    expect(await page.getByTestId('diff-same').first().textContent()).toContain('def truncate_number');
    expect(await page.getByTestId('program-diff').textContent()).toContain(`against node ${failing.id}: +2 −2 lines`);
    expect(ui.pageErrors).toEqual([]);
  });

  it('opens a folder by its path: every MBPP assert with its outcome; a path outside the allowed folders is refused', async () => {
    const { page, server } = ui;
    await page.goto(`${server.url}#/code-trees`);
    await page.getByTestId('code-tree-path').fill(path.join(home, 'code-trees', 'mbpp-scripted'));
    await page.getByTestId('code-tree-open').click();
    await page.getByTestId('tree-view').waitFor();
    const tree = linesOf('mbpp-scripted', 'plain')[0]!;
    const partial = tree.nodes.find((n) => n.tests!.some((t) => t.passed) && !n.passed)!;
    await page.locator(`[data-testid="tree-node"][data-node-id="${partial.id}"]`).click();
    await page.getByTestId('code-tests').waitFor();
    const rows = await page
      .getByTestId('code-test')
      .evaluateAll((els) => els.map((e) => [e.dataset.passed, e.querySelector('code')?.textContent]));
    expect(rows).toEqual(partial.tests!.map((t) => [String(t.passed), t.test]));
    expect(await page.getByTestId('code-test-error').allTextContents()).toEqual(
      partial.tests!.filter((t) => !t.passed).map((t) => `${t.error} at ${t.at}`),
    );

    await page.getByTestId('code-tree-path').fill(path.join(outside, 'mbpp'));
    await page.getByTestId('code-tree-open').click();
    const refused = page.getByTestId('code-trees-error');
    await refused.waitFor();
    expect(await refused.textContent()).toMatch(/outside the folders a window may use/);
    expect(await page.getByTestId('tree-view').count()).toBe(0);
    expect(ui.pageErrors).toEqual([]);
  });

  it.skipIf(!findExecutable('bwrap'))(
    'grows trees from Launch with an endpoint: the task file checked as typed, the folder listed and opened',
    async () => {
      const { page, server } = ui;
      await page.goto(`${server.url}#/launch?mode=code`);
      const tasks = page.getByTestId('ct-tasks');
      await tasks.fill(path.join(outside, 'double.jsonl'));
      await expect.poll(() => page.getByTestId('ct-tasks-error').textContent()).toMatch(/outside the folders/);
      expect(await page.getByTestId('ct-start').isDisabled()).toBe(true);
      await tasks.fill(path.join(home, 'double.jsonl'));
      await expect.poll(() => page.getByTestId('ct-tasks-ok').textContent()).toMatch(/^1 MBPP-format problem \(7\)/);
      await page.getByTestId('ct-source-endpoint').check();
      await page.getByTestId('ct-endpoint-url').fill(endpoint!.baseUrl);
      await page.getByTestId('ct-endpoint-model').fill('scripted');
      await page.getByTestId('ct-nodes').fill('3');
      await page.getByTestId('ct-search').selectOption('tplus');
      await page.getByTestId('ct-name').fill('from-launch');
      await page.getByTestId('ct-start').click();
      await page.getByTestId('ct-started').getByRole('link').click();
      const folder = page.locator('[data-testid="code-tree-folder"][data-name="from-launch"]');
      await expect
        .poll(() => folder.getByTestId('code-tree-state').getAttribute('data-state'), { timeout: 60_000 })
        .toBe('done');
      await page.getByTestId('tree-view').waitFor();
      await page.locator('[data-testid="tree-node"][data-node-id="1"]').click();
      expect(await page.getByTestId('code-test').evaluateAll((els) => els.map((e) => e.dataset.passed))).toEqual([
        'true',
        'false',
        'false',
      ]);

      // a tree whose endpoint never answers is stopped from the view
      const slow = await scriptedChatEndpoint({ hang: true });
      try {
        await page.goto(`${server.url}#/launch?mode=code`);
        await page.getByTestId('ct-tasks').fill(path.join(home, 'double.jsonl'));
        await page.getByTestId('ct-tasks-ok').waitFor();
        await page.getByTestId('ct-source-endpoint').check();
        await page.getByTestId('ct-endpoint-url').fill(slow.baseUrl);
        await page.getByTestId('ct-endpoint-model').fill('scripted');
        await page.getByTestId('ct-name').fill('slow');
        await page.getByTestId('ct-start').click();
        await page.getByTestId('ct-started').getByRole('link').click();
        const growing = page.locator('[data-testid="code-tree-folder"][data-name="slow"]');
        await growing.getByTestId('code-tree-stop').click();
        await expect
          .poll(() => growing.getByTestId('code-tree-state').getAttribute('data-state'), { timeout: 30_000 })
          .toBe('stopped');
        expect(await growing.getByTestId('code-tree-stop').count()).toBe(0);
      } finally {
        slow.close();
      }
      expect(ui.pageErrors).toEqual([]);
    },
    90_000,
  );
});
