/**
 * Evidence for issue 19: every view of the app (Runs, a run's charts, MARS episodes, MARTI trees, Diversity, Compare
 * with MARTI trees side by side, Launch with its form, Models with a card, a seqgrpo run's Replies, Code trees of
 * Python with a refinement's tests and diff, Replies of a chat model's Python with its special tokens shown, Launch's
 * code-tree form, a martipy run's Trees tab) in a real headless Chromium (Debian's, driven by playwright-core)
 * against web mode, at 1440 and 1024 px, light and dark (prefers-color-scheme), on real small runs made from the command
 * line in a temporary home (the martipy run's folder is written without training: tests/helpers/martipyRunFixture.ts). Screenshots go to tests/output/e2e/screens/ (git-ignored) to be looked at; at 1024 px the
 * page must not scroll sideways (document scrollWidth ≤ clientWidth). In dark, every view's main content must be dark
 * and its text readable on its background (WCAG contrast, darkReadability below).
 *
 * With it, the smaller fixes of issue 19 in the views: presets with the recommended one first and GPU-only ones marked;
 * the form scrolls into view when a preset or a clone fills it; a problem inside a closed section opens it; the form
 * refuses a MARTI training pool larger than its operations allow; Compare follows its address (Back, a pasted link)
 * and offers for B only runs of A's algorithm; after `serve` restarts, an open tab says its token was refused.
 *
 * Needs the built renderer (`npm run build`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, type Page } from 'playwright-core';
import { CHROMIUM, haveChromium, launchChromium } from '../helpers/chromium';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { DEFAULT_RENDERER_DIR, startWebServer, type WebServer } from '../../engine/api/web/webServer';
import { cli } from '../helpers/cli';
import { writeMartipyRun } from '../helpers/martipyRunFixture';
import { realModelOrSkipReason } from '../fixtures/gguf/ggufKit';

const OUTPUT = path.resolve('tests/output/e2e/screens');
const WIDTHS = [1440, 1024] as const;
const SCHEMES = ['light', 'dark'] as const;

if (!haveChromium) console.warn(`tests/e2e/screenshots.test.ts skipped: no Chromium at ${CHROMIUM}`);

let home: string;
let host: Host;
let server: WebServer;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];
const runs = { seqA: '', seqB: '', mars: '', marti: '', martipy: '' };

async function train(args: string[]): Promise<string> {
  const r = await cli(['train', ...args, '--home', home, '--json']);
  if (r.code !== 0) throw new Error(`train ${args.join(' ')} failed: ${r.stderr}`);
  const id = r.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { runId?: string })
    .find((m) => m.runId)?.runId;
  if (!id) throw new Error(`train ${args.join(' ')}: no run id in ${r.stdout.slice(0, 300)}`);
  return id;
}

/**
 * Whether the page scrolls sideways (more content than window width), with the widest culprits for the message; and
 * the tables wider than the box that shows them (columns cut off behind a scroll or a clip).
 */
async function overflow(): Promise<{
  scrollWidth: number;
  clientWidth: number;
  wide: string[];
  clippedTables: string[];
}> {
  return page.evaluate(`(() => {
    const root = document.documentElement;
    const name = (el) => el.tagName.toLowerCase() + (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ')[0] : '') + (el.dataset.testid ? '[' + el.dataset.testid + ']' : '');
    const wide = [...document.querySelectorAll('main *')]
      .filter((el) => el.getBoundingClientRect().right > root.clientWidth + 1)
      .slice(0, 5)
      .map(name);
    const clippedTables = [...document.querySelectorAll('main table')]
      .filter((t) => t.offsetParent !== null && t.parentElement && t.getBoundingClientRect().width > t.parentElement.clientWidth + 1)
      .map((t) => name(t) + ' ' + Math.round(t.getBoundingClientRect().width) + ' px in ' + t.parentElement.clientWidth + ' px');
    return { scrollWidth: root.scrollWidth, clientWidth: root.clientWidth, wide, clippedTables };
  })()`);
}

/**
 * Dark mode is readable: the main content's background (the colours behind it composited, as drawn) is dark, and each
 * visible piece of text in it (outside SVG, disabled controls, option lists, and Diversity's heat cells, whose score
 * colours and dark text are the same in both schemes) stands out from the background behind it
 * by WCAG's contrast ratio: at least 4.5 for headings, chart and table titles and table cells, at least 3 for the rest
 * (notes, units, muted facts). Returns the main background's luminance and the offenders (at most 12).
 */
async function darkReadability(): Promise<{ mainLuminance: number; checked: number; poor: string[] }> {
  return page.evaluate(`(() => {
    const parse = (c) => {
      const m = /^rgba?\\(([^)]+)\\)$/.exec(c) || /^color\\(srgb ([^)]+)\\)$/.exec(c);
      if (!m) return null;
      const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
      const scale = c.startsWith('color(') ? 255 : 1;
      return [p[0] * scale, p[1] * scale, p[2] * scale, p.length > 3 ? p[3] : 1];
    };
    const over = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3])).concat(1);
    const behind = (el) => {
      const chain = [];
      for (let e = el; e; e = e.parentElement) chain.push(parse(getComputedStyle(e).backgroundColor));
      let c = [255, 255, 255, 1];
      for (let i = chain.length - 1; i >= 0; i--) if (chain[i] && chain[i][3] > 0) c = over(chain[i], c);
      return c;
    };
    const lum = (c) => {
      const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
      return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
    };
    const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
    const main = document.querySelector('main');
    const primary = 'h1, h2, h3, h4, figcaption, figcaption *, td, th, .name';
    const texts = [...main.querySelectorAll('*')].filter((el) =>
      el.getClientRects().length > 0 &&
      !el.closest('svg, option, select, [disabled], .visually-hidden, td.heat') &&
      getComputedStyle(el).visibility === 'visible' &&
      [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim()));
    const poor = [];
    for (const el of texts) {
      const bg = behind(el);
      const fg = over(parse(getComputedStyle(el).color) || [0, 0, 0, 1], bg);
      const r = ratio(fg, bg);
      const need = el.matches(primary) ? 4.5 : 3;
      if (r < need) {
        const name = el.tagName.toLowerCase() + (typeof el.className === 'string' && el.className ? '.' + el.className.split(' ')[0] : '');
        poor.push(name + ' "' + el.textContent.trim().slice(0, 30) + '" ' + r.toFixed(2) + ' < ' + need + ' (' + fg.slice(0, 3).map(Math.round) + ' on ' + bg.slice(0, 3).map(Math.round) + ')');
      }
    }
    return { mainLuminance: lum(behind(main)), checked: texts.length, poor: poor.slice(0, 12) };
  })()`);
}

/**
 * How many pixels of the first chart's canvas in the main content are light grey and opaque: uPlot draws axis labels
 * on the canvas in --chart-axis, black in light and light grey in dark, so a chart drawn in dark's colours has many,
 * one drawn in light's (or uPlot's default black) none. Null where no chart is shown. (The switch without a reload is
 * tests/component/chartTheme.test.ts's: here the views may make their charts again after it.)
 */
async function lightInkOnChart(): Promise<number | null> {
  return page.evaluate(`(() => {
    const canvas = document.querySelector('main .uplot canvas');
    if (!canvas) return null;
    const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let n = 0;
    for (let i = 0; i < data.length; i += 4) {
      const [r, g, b, a] = [data[i], data[i + 1], data[i + 2], data[i + 3]];
      if (a > 200 && r > 140 && Math.abs(r - g) < 20 && Math.abs(g - b) < 25) n++;
    }
    return n;
  })()`);
}

/**
 * Opens `hash`, waits for `ready`, then for each width and scheme takes a full-page screenshot and checks overflow;
 * in dark, that the main content is dark and its text readable (darkReadability), and a chart's axes drawn in dark's
 * colours (lightInkOnChart).
 */
async function shootEverywhere(name: string, hash: string, ready: (p: Page) => Promise<void>): Promise<void> {
  for (const width of WIDTHS) {
    for (const scheme of SCHEMES) {
      await page.setViewportSize({ width, height: 900 });
      await page.emulateMedia({ colorScheme: scheme });
      if (page.url() !== `${server.url}${hash}`) {
        await page.goto(`${server.url}${hash}`);
      }
      await ready(page);
      await page.waitForTimeout(300); // layout after the resize (charts redraw on their width)
      await page.screenshot({ path: path.join(OUTPUT, `${name}-${width}-${scheme}.png`), fullPage: true });
      if (scheme === 'dark') {
        const dark = await darkReadability();
        expect
          .soft(dark.mainLuminance, `${name} at ${width} px in dark: the main content's background is light`)
          .toBeLessThan(0.05);
        expect.soft(dark.checked, `${name}: no text found to check`).toBeGreaterThan(5);
        expect.soft(dark.poor, `${name} at ${width} px in dark: text hard to read on its background`).toEqual([]);
        const ink = await lightInkOnChart();
        if (ink !== null) {
          expect
            .soft(ink, `${name} at ${width} px in dark: the chart's axes are not drawn in dark's colours`)
            .toBeGreaterThan(50);
        }
      }
      if (width === 1024) {
        const o = await overflow();
        expect
          .soft(o.scrollWidth, `${name} at 1024 px (${scheme}) scrolls sideways: ${o.wide.join(', ')}`)
          .toBeLessThanOrEqual(o.clientWidth);
        expect.soft(o.clippedTables, `${name} at 1024 px (${scheme}): tables with columns cut off`).toEqual([]);
      }
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1440, height: 900 });
}

describe.skipIf(!haveChromium)('every view at 1440 and 1024 px, light and dark (issue 19)', () => {
  beforeAll(async () => {
    const index = path.join(DEFAULT_RENDERER_DIR, 'index.html');
    if (!fs.existsSync(index)) throw new Error(`the built renderer is missing (${index}): run \`npm run build\` first`);
    fs.mkdirSync(OUTPUT, { recursive: true });
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-screens-'));
    const seq = [
      '--preset',
      'seqgrpo-copy',
      '--steps',
      '30',
      '--set',
      'checkpoint.every=10',
      '--set',
      'eval.every=10',
      '--set',
      'eval.items=8',
    ];
    const martiConfig = {
      algorithm: 'marti',
      model: { size: 'tiny' },
      task: { trainTasks: 20 },
      marti: {
        configuration: 'heterogeneous',
        agents: [
          { id: 'alpha', rolePrompt: 'agent alpha :' },
          { id: 'beta', rolePrompt: 'agent beta :' },
        ],
        problemsPerStep: 2,
        nodesPerTree: 5,
        trainBatch: 4,
        evalNodes: 3,
        tplus: { enabled: false },
      },
      budget: { steps: 2 },
      eval: { every: 1, items: 3 },
      checkpoint: { every: 1, keep: 2 },
    };
    const martiFile = path.join(home, 'marti.json');
    fs.writeFileSync(martiFile, JSON.stringify(martiConfig));
    // one after another: the machine's cores are few
    runs.seqA = await train(seq);
    runs.seqB = await train([...seq, '--set', 'seed=1']);
    runs.mars = await train([
      '--preset',
      'mars-tiny',
      '--steps',
      '2',
      '--set',
      'task.questionsPerStep=2',
      '--set',
      'task.groupSize=4',
      '--set',
      'model.from={"kind":"random"}',
      '--set',
      'eval.every=0',
      '--set',
      'eval.items=7',
      '--set',
      'checkpoint.every=1',
    ]);
    runs.marti = await train(['--config', martiFile]);
    // A martipy run's trees of Python, written without training (tests/helpers/martipyRunFixture.ts).
    runs.martipy = writeMartipyRun(home).runId;
    // What a chat model writes, in a seqgrpo run's records (seqB's last step, so no other run is added to the lists
    // the other cases count): a Python block ended by its template's special tokens.
    const chatGroup = {
      kind: 'seqgrpo.group',
      version: 1,
      step: 30,
      input: 'Write a Python function that doubles x.',
      target: 'def double(x): return 2 * x',
      rollouts: [
        {
          output:
            'Sure:\n```python\ndef double(x):\n    # twice x\n    return 2 * x\n```<|im_end|>\n<|im_start|>assistant\n',
          reward: 1,
          advantage: 1,
          logProbs: [-0.1, -0.2],
        },
      ],
    };
    fs.appendFileSync(path.join(home, 'runs', runs.seqB, 'trajectories.jsonl'), JSON.stringify(chatGroup) + '\n');
    // Trees of Python as `code tree --out` writes them (tests/fixtures/code-trees/: real sandbox verdicts).
    for (const name of ['humaneval-scripted', 'mbpp-scripted']) {
      fs.cpSync(path.resolve('tests/fixtures/code-trees', name), path.join(home, 'code-trees', name), {
        recursive: true,
      });
    }

    host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
    server = await startWebServer({ host, port: 0 });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    page.on('pageerror', (error) => pageErrors.push(error.message));
  }, 900_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await host?.close();
    if (home) fs.rmSync(home, { recursive: true, force: true });
  });

  it('Launch lists the recommended preset first and marks the GPU-only ones', async () => {
    await page.goto(`${server.url}#/launch`);
    await page.getByTestId('launch-empty').waitFor();
    const cards = page.locator(
      '[data-testid^="preset-"]:not([data-testid="preset-recommended"]):not([data-testid="preset-gpu"])',
    );
    expect(await cards.first().getAttribute('data-testid')).toBe('preset-seqgrpo-copy');
    expect(await page.getByTestId('preset-seqgrpo-copy').getByTestId('preset-recommended').count()).toBe(1);
    for (const name of ['mars-small', 'marti-homo-small', 'marti-hetero-small', 'marti-single-small']) {
      expect(await page.getByTestId(`preset-${name}`).getByTestId('preset-gpu').count(), name).toBe(1);
    }
    for (const name of ['seqgrpo-copy', 'mars-tiny', 'marti-homo']) {
      expect(await page.getByTestId(`preset-${name}`).getByTestId('preset-gpu').count(), name).toBe(0);
    }
  });

  it('the form scrolls into view when a preset fills it below the gallery, and when a clone does', async () => {
    await page.setViewportSize({ width: 1024, height: 700 });
    await page.goto(`${server.url}#/launch`);
    await page.getByTestId('launch-empty').waitFor();
    // a preset low in the gallery, so that the form below it starts below the fold
    await page.getByTestId('preset-seqgrpo-reverse').click();
    await page.getByTestId('launch-form').waitFor();
    const headingInView = async (): Promise<boolean> =>
      page.evaluate(
        `(() => { const el = document.querySelector('.form-heading'); if (!el) return false; const r = el.getBoundingClientRect(); return r.top >= 0 && r.top < window.innerHeight; })()`,
      );
    await expect.poll(headingInView, { timeout: 5_000 }).toBe(true);

    await page.goto(`${server.url}#/runs`);
    await page.goto(`${server.url}#/launch?from=${encodeURIComponent(runs.seqA)}`);
    await page.getByTestId('launch-form').waitFor();
    await expect.poll(headingInView, { timeout: 5_000 }).toBe(true);
    expect(await page.evaluate('window.scrollY')).toBeGreaterThan(0);
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('a problem inside a closed section opens it; a MARTI pool larger than its operations allow is refused', async () => {
    await page.goto(`${server.url}#/launch?preset=marti-homo`);
    const evalSection = page.locator('details[data-path="eval"]');
    await evalSection.waitFor();
    const evalOpen = (): Promise<boolean> => page.evaluate(`document.querySelector('details[data-path="eval"]').open`);
    expect(await evalOpen()).toBe(false);
    // one operation: 44 training targets and 39 held-out ones exist; the preset asks for 2000 and 256
    await page.locator('#field-task-maxOps').fill('1');
    await page.locator('#field-task-minOps').fill('1');
    const evalError = page.locator('[data-path="eval.items"] [data-testid="field-error"]');
    await evalError.waitFor();
    expect(await evalError.textContent()).toMatch(/at most \d+ distinct held-out targets/);
    await expect.poll(evalOpen).toBe(true);
    expect(await evalError.isVisible()).toBe(true);
    await page.locator('#field-task-maxOps').fill('2');
    await page.locator('#field-task-trainTasks').fill('100000');
    const poolError = page.locator('[data-path="task.trainTasks"] [data-testid="field-error"]');
    await expect
      .poll(() => poolError.textContent(), { timeout: 10_000 })
      .toMatch(/at most \d+ distinct training targets of 1–2 operations/);
    expect(await page.getByTestId('start-run').isDisabled()).toBe(true);
    await page.screenshot({ path: path.join(OUTPUT, 'launch-pool-error-1440-light.png'), fullPage: true });
  });

  it('Compare offers for B only runs of A’s algorithm, and follows its address (a pasted link, Back)', async () => {
    await page.goto(`${server.url}#/compare`);
    await page.getByTestId('run-A').waitFor();
    await page.getByTestId('run-A').selectOption(runs.mars);
    const optionsB = async (): Promise<string[]> =>
      page
        .getByTestId('run-B')
        .locator('option:not([disabled])')
        .evaluateAll((els) => els.map((e) => (e as unknown as { value: string }).value));
    await expect.poll(optionsB).toEqual([runs.mars]);
    await page.getByTestId('run-A').selectOption(runs.seqA);
    await expect.poll(async () => (await optionsB()).sort()).toEqual([runs.seqA, runs.seqB].sort());

    // a first comparison from the button
    await page.getByTestId('run-B').selectOption(runs.seqB);
    await expect.poll(() => page.getByTestId('step-B').inputValue()).toBe('30');
    await page.getByTestId('step-A').selectOption('10');
    await page.getByTestId('compare-run').click();
    const summary = page.getByTestId('compare-result').locator('p.muted').first();
    await expect.poll(() => summary.textContent(), { timeout: 120_000 }).toContain(`${runs.seqA} @ step 10`);
    // a pasted link in the open tab: the view shows that comparison
    await page.evaluate(
      `location.hash = ${JSON.stringify(`#/compare?a=${encodeURIComponent(`${runs.seqA}@20`)}&b=${encodeURIComponent(`${runs.seqA}@30`)}`)}`,
    );
    await expect.poll(() => summary.textContent(), { timeout: 120_000 }).toContain(`B = ${runs.seqA} @ step 30`);
    expect(await summary.textContent()).toContain(`A = ${runs.seqA} @ step 20`);
    expect(await page.getByTestId('step-A').inputValue()).toBe('20');
    // Back: the first comparison again
    await page.goBack();
    await expect.poll(() => summary.textContent(), { timeout: 120_000 }).toContain(`B = ${runs.seqB} @ step 30`);
    expect(await summary.textContent()).toContain(`A = ${runs.seqA} @ step 10`);
    expect(await page.getByTestId('run-B').inputValue()).toBe(runs.seqB);
    expect(pageErrors).toEqual([]);
  });

  it('screenshots: Runs, a run’s charts, Launch', async () => {
    await shootEverywhere('runs', '#/runs', async (p) => {
      await p.locator(`tr[data-run-id="${runs.marti}"]`).waitFor();
    });
    await shootEverywhere('run-charts', `#/run/${encodeURIComponent(runs.seqA)}`, async (p) => {
      await p.locator('[data-testid^="chart-"]').first().waitFor();
    });
    await shootEverywhere('launch', '#/launch?preset=seqgrpo-copy', async (p) => {
      await p.getByText('settings are valid').waitFor();
    });
    expect(pageErrors).toEqual([]);
  });

  it('screenshots: MARS episodes, MARTI trees and diversity', async () => {
    await shootEverywhere('episodes', `#/run/${encodeURIComponent(runs.mars)}/episodes`, async (p) => {
      await p.getByTestId('episode-inspector').waitFor();
      if ((await p.getByTestId('episode').count()) === 0) {
        await p.getByTestId('group-card').first().click();
        await p.getByTestId('episode').waitFor();
      }
    });
    await shootEverywhere('tree', `#/run/${encodeURIComponent(runs.marti)}/tree`, async (p) => {
      await p.getByTestId('tree-view').waitFor();
    });
    await shootEverywhere('diversity', `#/run/${encodeURIComponent(runs.marti)}/diversity`, async (p) => {
      await p.getByTestId('diversity-tab').waitFor();
      await p.getByTestId('solved-matrix').waitFor();
    });
    expect(pageErrors).toEqual([]);
  });

  it('screenshots: two runs overlaid in Runs, the token heat map, a selected tree node (dark mode’s tints)', async () => {
    await shootEverywhere('runs-overlay', '#/runs', async (p) => {
      for (const id of [runs.seqA, runs.seqB]) {
        const box = p.locator(`tr[data-run-id="${id}"] [data-testid="pick-run"]`);
        await box.waitFor();
        if (!(await box.isChecked())) await box.check();
      }
      await p.getByTestId('runs-overlay').locator('canvas').first().waitFor();
    });
    await shootEverywhere('episodes-logprob', `#/run/${encodeURIComponent(runs.mars)}/episodes`, async (p) => {
      await p.getByTestId('episode-inspector').waitFor();
      if ((await p.getByTestId('episode').count()) === 0) {
        await p.getByTestId('group-card').first().click();
        await p.getByTestId('episode').waitFor();
      }
      await p.getByTestId('token-mode-logprob').check();
      await p.getByTestId('token-legend').waitFor();
    });
    await shootEverywhere('tree-node', `#/run/${encodeURIComponent(runs.marti)}/tree`, async (p) => {
      await p.getByTestId('tree-view').waitFor();
      await p.locator('[data-testid="tree-node"]:not([data-root])').first().click();
      await p.getByTestId('node-program').waitFor();
    });
    expect(pageErrors).toEqual([]);
  });

  it('screenshots: a seqgrpo run’s Replies tab (issue 33)', async () => {
    await shootEverywhere('replies', `#/run/${encodeURIComponent(runs.seqA)}/replies`, async (p) => {
      await p.getByTestId('reply-group').first().waitFor();
    });
  });

  it('screenshots: Code trees with a refinement’s tests and diff, Replies of a chat model’s Python (issues 31, 33)', async () => {
    await shootEverywhere(
      'code-trees',
      '#/code-trees?dir=humaneval-scripted&search=tplus&problem=HumanEval%2F2',
      async (p) => {
        await p.getByTestId('tree-view').waitFor();
        if ((await p.getByTestId('program-diff').count()) === 0) {
          await p.locator('[data-testid="tree-node"][data-node-id="2"]').click();
        }
        await p.getByTestId('program-diff').waitFor();
        await p.getByTestId('code-test').first().waitFor();
      },
    );
    await shootEverywhere('code-trees-failing', '#/code-trees?dir=mbpp-scripted&search=plain', async (p) => {
      await p.getByTestId('tree-view').waitFor();
      if ((await p.getByTestId('code-test-error').count()) === 0) {
        await p.locator('[data-testid="tree-node"][data-node-id="1"]').click();
      }
      await p.getByTestId('code-test-error').first().waitFor();
    });
    await shootEverywhere('replies-python', `#/run/${encodeURIComponent(runs.seqB)}/replies`, async (p) => {
      await p.getByTestId('reply-code').first().waitFor();
      const toggle = p.getByTestId('show-special-tokens');
      if (!(await toggle.isChecked())) await toggle.check();
      await p.getByTestId('special-token').first().waitFor();
    });
    await shootEverywhere('launch-code-trees', '#/launch?mode=code', async (p) => {
      await p.getByTestId('code-tree-form').waitFor();
      await p.locator('[data-testid="ct-tasks-ok"], [data-testid="ct-tasks-error"]').first().waitFor();
    });
    expect(pageErrors).toEqual([]);
  });

  it('screenshots: a martipy run’s Trees tab: a failing node’s test error and advantage (issues 31, 33)', async () => {
    await shootEverywhere('run-code-trees', `#/run/${encodeURIComponent(runs.martipy)}/codetrees`, async (p) => {
      await p.getByTestId('tree-view').waitFor();
      if ((await p.getByTestId('code-test-error').count()) === 0) {
        await p.locator('[data-testid="tree-node"][data-node-id="1"]').click();
      }
      await p.getByTestId('code-test-error').first().waitFor();
      await p.getByTestId('node-advantage').waitFor();
    });
    expect(pageErrors).toEqual([]);
  });

  it('screenshots: Models with a base’s card and its memory gauges (issue 33)', async () => {
    await shootEverywhere('models', '#/models', async (p) => {
      if (!(await p.getByTestId('card-memory').isVisible())) {
        await p.locator('[data-id="base:marti/base-tiny"]').click();
      }
      await p.getByTestId('card-memory').waitFor();
    });
  });

  it.skipIf(!realModelOrSkipReason().path)(
    'screenshots: the chat playground with SmolLM2’s answer (issue 33)',
    async () => {
      await shootEverywhere('models-chat', '#/models', async (p) => {
        const answer = p.locator('[data-testid="chat-turn"][data-role="assistant"]');
        if ((await answer.count()) === 0) {
          await p.locator('[data-id="fetch:smollm2-135m-instruct"]').click();
          await p.getByLabel('Temperature').fill('0');
          await p.getByTestId('chat-max-tokens').fill('40');
          await p.getByTestId('chat-input').fill('What is the capital of France?');
          await p.getByTestId('chat-send').click();
        }
        await expect.poll(() => p.getByTestId('chat-status').textContent(), { timeout: 120_000 }).toMatch(/tokens\/s/);
      });
    },
    300_000,
  );

  it.skipIf(!realModelOrSkipReason().path)(
    'screenshots: Launch of a real model with its memory gauge and measured time a step (issue 33)',
    async () => {
      // measured once and shot without reloading (shootEverywhere reloads, and the probe takes ~25 s)
      await page.goto(`${server.url}#/launch?preset=chatgrpo-addition`);
      await page.getByTestId('memory-plan').waitFor();
      await page.getByTestId('step-probe-measure').click();
      await page.getByTestId('step-probe-estimate').waitFor({ timeout: 200_000 });
      for (const width of WIDTHS) {
        for (const scheme of SCHEMES) {
          await page.setViewportSize({ width, height: 900 });
          await page.emulateMedia({ colorScheme: scheme });
          await page.waitForTimeout(300);
          await page.screenshot({ path: path.join(OUTPUT, `launch-probe-${width}-${scheme}.png`), fullPage: true });
          if (scheme === 'dark') {
            const dark = await darkReadability();
            expect.soft(dark.poor, `launch-probe at ${width} px in dark: text hard to read`).toEqual([]);
          }
          if (width === 1024) {
            const o = await overflow();
            expect
              .soft(o.scrollWidth, `launch-probe at 1024 px scrolls sideways: ${o.wide.join(', ')}`)
              .toBeLessThanOrEqual(o.clientWidth);
          }
        }
      }
      await page.emulateMedia({ colorScheme: 'light' });
      await page.setViewportSize({ width: 1440, height: 900 });
      expect(pageErrors).toEqual([]);
    },
    300_000,
  );

  it('screenshots: Compare with two MARTI checkpoints’ trees side by side', async () => {
    // opened from the address, then the button (a page opened on an address waits for it)
    await page.goto(
      `${server.url}#/compare?a=${encodeURIComponent(`${runs.marti}@1`)}&b=${encodeURIComponent(`${runs.marti}@2`)}`,
    );
    await expect.poll(() => page.getByTestId('step-B').inputValue(), { timeout: 20_000 }).toBe('2');
    await page.getByTestId('compare-run').click();
    await page.getByTestId('compare-result').waitFor({ timeout: 300_000 });
    if ((await page.getByTestId('compare-item').count()) === 0) await page.getByText('only flipped items').click();
    await page.getByTestId('compare-item').first().click();
    await page.locator('[data-testid="output-A"] [data-testid="tree-view"]').waitFor();
    const hash = new URL(page.url()).hash;
    await shootEverywhere('compare', hash, async (p) => {
      if ((await p.getByTestId('compare-result').count()) === 0) {
        await p.getByTestId('compare-run').click();
        await p.getByTestId('compare-result').waitFor({ timeout: 120_000 });
      }
      if ((await p.getByTestId('output-A').count()) === 0) {
        if ((await p.getByTestId('compare-item').count()) === 0) await p.getByText('only flipped items').click();
        await p.getByTestId('compare-item').first().click();
      }
      await p.locator('[data-testid="output-B"] [data-testid="tree-view"]').waitFor();
    });
    // each tree fits its column
    for (const col of ['A', 'B']) {
      const fits = await page.evaluate(
        `(() => { const el = document.querySelector('[data-testid="output-${col}"]'); const svgs = [...el.querySelectorAll('svg')]; return svgs.length > 0 && svgs.every((s) => s.getBoundingClientRect().right <= el.getBoundingClientRect().right + 1); })()`,
      );
      expect.soft(fits, `the tree in column ${col} is clipped`).toBe(true);
    }
    expect(pageErrors).toEqual([]);
  });

  it('after `serve` restarts (a new token), an open tab says its token was refused instead of retrying for ever', async () => {
    await page.goto(`${server.url}#/runs`);
    await page.getByTestId('runs-table').waitFor();
    const port = Number(new URL(server.url).port);
    await server.close();
    server = await startWebServer({ host, port });
    const status = page.getByTestId('host-status');
    await expect.poll(() => status.getAttribute('data-state'), { timeout: 30_000, interval: 250 }).toBe('refused');
    expect(await status.textContent()).toContain('token refused');
    await page.screenshot({ path: path.join(OUTPUT, 'token-refused-1440-light.png') });
  });
});
