/**
 * What the CLI prints, through the channels people and scripts use: every byte of a long output arrives through a
 * real pipe with a slow reader (stdout and, on failure, stderr); text from run folders never reaches the terminal as
 * control characters; and metric names that are also names of built-ins (`constructor`, `toString`, `__proto__`)
 * are shown and exported like any other. Run folders are crafted by hand, as a copied-in or damaged folder would be.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_READ_WARNINGS } from '../../engine/runs/folder/jsonl';
import { BIN, cli } from '../helpers/cli';

const sh = promisify(execFile);

let home: string;

/** A run folder as the engine writes it, with the given run.json fields and metrics.jsonl text. */
function craftRun(folder: string, meta: Record<string, unknown>, metrics: string): string {
  const dir = path.join(home, 'runs', folder);
  fs.mkdirSync(dir, { recursive: true });
  const run = {
    id: folder,
    createdAt: '2026-12-01T00:00:00Z',
    algorithm: 'seqgrpo',
    config: {},
    engineVersion: 'test',
    seed: 1,
    status: 'finished',
    statusAt: '2026-12-01T00:00:00Z',
    tags: [],
    notes: '',
    ...meta,
  };
  fs.writeFileSync(path.join(dir, 'run.json'), JSON.stringify(run));
  fs.writeFileSync(path.join(dir, 'metrics.jsonl'), metrics);
  return dir;
}

/** Runs `command` in sh, where `$MARS_LAB` runs the CLI (the package's bin through Node); returns its stdout. */
async function shell(command: string): Promise<string> {
  const script = `MARS_LAB() { "$NODE_BIN" "$CLI_BIN" "$@"; }; ${command.replaceAll('$MARS_LAB', 'MARS_LAB')}`;
  const { stdout } = await sh('sh', ['-c', script], {
    env: { ...process.env, NODE_BIN: process.execPath, CLI_BIN: BIN, HOME_DIR: home },
    maxBuffer: 64 << 20,
  });
  return stdout;
}

const BIG_LINES = 20_000;

beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-cli-output-'));
  // ~1.8 MB of CSV: far past the 64 KiB a pipe holds.
  let big = '';
  for (let step = 1; step <= BIG_LINES; step++) {
    big += `{"step":${step},"time":${1_700_000_000 + step},"reward":${(step % 97) / 97},"loss":${1 / step},"kl":${step * 1e-7}}\n`;
  }
  // Long notes make `show --json` ~300 KB too.
  craftRun('20261201-000001-big-0001', { notes: 'a long note, '.repeat(25_000) }, big);
  // Every line unreadable: one warning each on stderr (~2 MB).
  craftRun('20261201-000002-warnings-0002', {}, 'not json at all, a line of a damaged log\n'.repeat(BIG_LINES));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

describe('output through a pipe', () => {
  it('export --csv arrives whole through a pipe whose reader starts late', async () => {
    const file = path.join(home, 'big.csv');
    expect((await cli(['export', '20261201-000001-big', '--csv', '--out', file, '--home', home])).code).toBe(0);
    const expected = fs.statSync(file).size;
    expect(expected).toBeGreaterThan(1_000_000);
    const got = await shell(`$MARS_LAB export 20261201-000001-big --csv --home "$HOME_DIR" | (sleep 1; wc -c)`);
    expect(Number(got.trim())).toBe(expected);
  });

  it('show --json (~300 KB) arrives whole through a slow pipe and parses', async () => {
    const got = await shell(`$MARS_LAB show 20261201-000001-big --json --home "$HOME_DIR" | (sleep 1; cat)`);
    expect(got.length).toBeGreaterThan(300_000);
    const shown = JSON.parse(got) as { steps: number; notes: string; metrics: Record<string, unknown> };
    expect(shown.steps).toBe(BIG_LINES);
    expect(shown.notes).toBe('a long note, '.repeat(25_000));
    expect(Object.keys(shown.metrics)).toEqual(['reward', 'loss', 'kl']);
  });

  // A damaged log of 20,000 lines gives MAX_READ_WARNINGS warnings and one count of the rest, not 2 MB of stderr
  // (runs/folder/jsonl.ts); what is printed still arrives whole, the error last, through a reader that starts late.
  it('a failing command leaves its bounded warnings and its one-line error on a slow stderr pipe', async () => {
    const got = await shell(
      `$MARS_LAB export 20261201-000002-warnings --csv --out /dev/full --home "$HOME_DIR" 2>&1 >/dev/null | (sleep 1; cat)`,
    );
    const lines = got.trimEnd().split('\n');
    const warnings = lines.filter((l) => l.startsWith('warning: '));
    expect(warnings).toHaveLength(MAX_READ_WARNINGS + 1);
    expect(warnings.at(-1)).toMatch(new RegExp(`and ${BIG_LINES - MAX_READ_WARNINGS} more lines skipped`));
    expect(lines).toHaveLength(MAX_READ_WARNINGS + 2);
    expect(lines.at(-1)).toBe(
      'mars-lab: no space left on device writing /dev/full: free space, then run the command again',
    );
  });

  // Guards the fix above: waiting for stdout to drain must not turn a closed pipe into an EPIPE stack trace.
  it('a reader that stops early ends the command quietly (no EPIPE stack)', async () => {
    const err = path.join(home, 'epipe.err');
    const got = await shell(`$MARS_LAB export 20261201-000001-big --csv --home "$HOME_DIR" 2>"${err}" | head -c 20`);
    expect(got).toBe('step,time,reward,los');
    expect(fs.readFileSync(err, 'utf8')).toBe('');
  });
});

describe('text from run folders printed for people', () => {
  const TITLE = '\x1b]0;pwned\x07';
  const CLIPBOARD = '\x1b]52;c;cm0gLXJmIH4=\x07';
  const CSI8 = '\x9b2J'; // the 8-bit CSI (clear screen)
  /** Anything a terminal acts on: C0 but newline, DEL, C1. */
  const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
  let home2: string;

  beforeAll(() => {
    home2 = home;
    craftRun(
      `20261201-000003-ctl${TITLE}-0003`,
      {
        algorithm: `seqgrpo${CLIPBOARD}`,
        preset: `copy${CSI8}`,
        createdAt: `2026-12-01${TITLE}`,
        config: { note: `x${CLIPBOARD}\u202e` },
      },
      `${JSON.stringify({ step: 1, time: 1, reward: 0.5, [`evil${TITLE}`]: 1, 'two\nlines': 2 })}\n{"step":2,"time":2,"reward":0.25}\n`,
    );
  });

  it('ls escapes control characters from folder names, algorithms and presets', async () => {
    const r = await cli(['ls', '--home', home2]);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(CONTROL);
    expect(r.stdout).toContain('20261201-000003-ctl\\x1b]0;pwned\\x07-0003');
    expect(r.stdout).toContain('seqgrpo\\x1b]52;c;cm0gLXJmIH4=\\x07');
    expect(r.stdout).toContain('copy\\x9b2J');
  });

  it('show escapes them in the header, metric names and config, one line per metric', async () => {
    const r = await cli(['show', '20261201-000003-ctl', '--home', home2]);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(CONTROL);
    expect(r.stdout).toContain('run 20261201-000003-ctl\\x1b]0;pwned\\x07-0003');
    expect(r.stdout).toContain('created 2026-12-01\\x1b]0;pwned\\x07');
    expect(r.stdout).toMatch(/^ {2}evil\\x1b\]0;pwned\\x07 +last 1 /m);
    expect(r.stdout).toMatch(/^ {2}two\\x0alines +last 2 /m);
    expect(r.stdout).toContain('config: {"note":"x\\u001b]52;c;cm0gLXJmIH4=\\u0007\\u{202e}"}');
  });

  it('--json keeps the data as it is (JSON escapes it)', async () => {
    const r = await cli(['show', '20261201-000003-ctl', '--json', '--home', home2]);
    expect(r.code).toBe(0);
    const shown = JSON.parse(r.stdout) as { id: string; algorithm: string; metrics: Record<string, unknown> };
    expect(shown.id).toBe(`20261201-000003-ctl${TITLE}-0003`);
    expect(shown.algorithm).toBe(`seqgrpo${CLIPBOARD}`);
    expect(Object.keys(shown.metrics)).toContain(`evil${TITLE}`);
  });
});

describe('metric names that are names of built-ins', () => {
  beforeAll(() => {
    craftRun(
      '20261201-000004-names-0004',
      {},
      '{"step":1,"time":1,"reward":0.5,"constructor":1,"toString":2,"__proto__":3}\n{"step":2,"time":2,"reward":0.25,"constructor":4}\n',
    );
  });

  it('show lists constructor, toString and __proto__ with their values', async () => {
    const r = await cli(['show', '20261201-000004-names', '--home', home]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ {2}constructor +last 4 +min 1 +max 4$/m);
    expect(r.stdout).toMatch(/^ {2}toString +last 2 +min 2 +max 2$/m);
    expect(r.stdout).toMatch(/^ {2}__proto__ +last 3 +min 3 +max 3$/m);
    const json = JSON.parse((await cli(['show', '20261201-000004-names', '--json', '--home', home])).stdout) as {
      metrics: object;
    };
    expect(Object.keys(json.metrics)).toEqual(['reward', 'constructor', 'toString', '__proto__']);
  });

  it('export --csv has their columns, empty where a line did not log them', async () => {
    const r = await cli(['export', '20261201-000004-names', '--csv', '--home', home]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('step,time,reward,constructor,toString,__proto__\n1,1,0.5,1,2,3\n2,2,0.25,4,,\n');
  });

  it('ls --json keeps constructor and toString in the run summary', async () => {
    const r = await cli(['ls', '--json', '--home', home]);
    const run = (JSON.parse(r.stdout) as { id: string; metrics: Record<string, unknown> }[]).find(
      (x) => x.id === '20261201-000004-names-0004',
    )!;
    expect(Object.keys(run.metrics)).toEqual(expect.arrayContaining(['reward', 'constructor', 'toString']));
    expect(run.metrics.constructor).toEqual({ last: 4, min: 1, max: 4 });
  });
});
