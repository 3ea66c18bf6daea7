/**
 * `export --csv` on a terminal (issue 34, Low): a run folder's metric name carrying escape sequences (set the
 * window title, ring the bell) reaches a terminal shown as escapes, not as control bytes; piped, the CSV stays byte
 * for byte what the log holds. The terminal is a real pseudo-terminal from util-linux's `script`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUN_FILES } from '../../engine/runs/folder/home';
import { createRunFolder } from '../../engine/runs/folder/runFolder';

const CLI = path.resolve('engine/bin/mars-lab.mjs');
const HOSTILE = '\u001b]0;pwned\u0007reward\u001b[2J';
let home: string;
let runId: string;

beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-export-tty-'));
  const run = createRunFolder(home, {
    algorithm: 'seqgrpo',
    config: {},
    engineVersion: '0',
    seed: 1,
    tags: [],
    notes: '',
  });
  runId = run.id;
  const lines = [1, 2, 3].map((step) => JSON.stringify({ step, time: 1_700_000_000 + step, [HOSTILE]: step / 4 }));
  fs.writeFileSync(path.join(run.dir, RUN_FILES.metrics), lines.join('\n') + '\n');
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

describe('export --csv', () => {
  it('shows a hostile metric name escaped on a terminal, and writes it byte for byte to a pipe', () => {
    const hasScript = spawnSync('script', ['--version']).status === 0;
    expect(hasScript, 'util-linux script is needed for a pseudo-terminal').toBe(true);
    const command = [process.execPath, CLI, 'export', runId, '--csv', '--home', home].map((a) => `'${a}'`).join(' ');
    const onTty = execFileSync('script', ['-qec', command, '/dev/null'], { encoding: 'latin1' });
    expect(onTty).toContain('\\x1b]0;pwned\\x07reward\\x1b[2J');
    expect(onTty).not.toMatch(/[\u001b\u0007]/);
    const piped = execFileSync(process.execPath, [CLI, 'export', runId, '--csv', '--home', home], { encoding: 'utf8' });
    expect(piped.split('\n')[0]).toContain(HOSTILE);
    expect(piped.split('\n').filter(Boolean)).toHaveLength(4);
  }, 60_000);
});
