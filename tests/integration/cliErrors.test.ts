/**
 * Failures of the machine, not the code, reach the user as one line naming the file and the next step, exit code 2,
 * no stack trace: a full disk, a file system or folder that refuses writes, a folder where a file was expected, too
 * few open files, and inputs nested too deeply to process. The faithful ones are produced for real (/dev/full,
 * /sys, a file used as a folder, `ulimit -n`); the rest (EROFS, a full disk during a run) go through the same mapper
 * with the errors Node raises for them.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  describeFailure,
  describeIoError,
  jsonNestingDepth,
  noteInput,
  noteRun,
  resetCliContext,
} from '../../engine/commands/ioErrors';
import { JsonlAppender } from '../../engine/runs/folder/jsonl';
import { UserError } from '../../engine/base/userError';
import { BIN, cli } from '../helpers/cli';

let home: string;
const RUN = '20261201-000000-io-0001';

beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-cli-errors-'));
  const dir = path.join(home, 'runs', RUN);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'run.json'),
    JSON.stringify({
      id: RUN,
      createdAt: '2026-12-01T00:00:00Z',
      algorithm: 'seqgrpo',
      config: {},
      engineVersion: 'test',
      seed: 1,
      status: 'finished',
      statusAt: '2026-12-01T00:00:00Z',
      tags: [],
      notes: '',
    }),
  );
  fs.writeFileSync(path.join(dir, 'metrics.jsonl'), '{"step":1,"time":1,"reward":0.5}\n');
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

/** Exactly one line on stderr, matching `message`; exit code 2; nothing that looks like a stack frame. */
function expectOneLine(r: { code: number; stderr: string }, message: RegExp): void {
  expect(r.stderr).not.toMatch(/^\s+at .+[:(]\d+/m);
  expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(r.stderr.trimEnd()).toMatch(message);
  expect(r.code).toBe(2);
}

const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);

describe('I/O errors at the CLI boundary', () => {
  it('a full disk (ENOSPC, /dev/full) names the file and says to free space', async () => {
    expectOneLine(
      await cli(['export', RUN, '--csv', '--out', '/dev/full', '--home', home]),
      /^mars-lab: no space left on device writing \/dev\/full: free space, then run the command again$/,
    );
  });

  it('a folder where a file was expected (EISDIR)', async () => {
    expectOneLine(
      await cli(['export', RUN, '--csv', '--out', home, '--home', home]),
      new RegExp(`^mars-lab: ${home} is a folder, expected a file: name a file$`),
    );
  });

  it('a place that refuses writes even to root (EACCES, /sys)', async () => {
    expectOneLine(
      await cli(['export', RUN, '--csv', '--out', '/sys/mars-lab-export.csv', '--home', home]),
      /^mars-lab: permission denied on \/sys\/mars-lab-export\.csv: check the permissions of \/sys\/mars-lab-export\.csv and its folder \(ls -ld\)/,
    );
  });

  it('a home under a file (ENOTDIR)', async () => {
    const file = path.join(home, 'a-file');
    fs.writeFileSync(file, 'x');
    expectOneLine(
      await cli(['ls', '--home', path.join(file, 'home')]),
      /^mars-lab: .*a-file\/home\/index\.json: part of this path is a file, expected a folder: check the path$/,
    );
  });

  it('too few open files to load the engine (EMFILE, ulimit -n 30)', async () => {
    const r = await promisify(execFile)(
      'sh',
      ['-c', 'ulimit -n 30 && exec "$NODE_BIN" "$CLI_BIN" ls --home "$HOME_DIR"'],
      {
        env: { ...process.env, NODE_BIN: process.execPath, CLI_BIN: BIN, HOME_DIR: home },
      },
    ).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
    expectOneLine(
      r,
      /^mars-lab: too many open files while loading.*: raise the limit \(it is 30\), e\.g\. ulimit -n 4096/,
    );
  });
});

describe('inputs nested too deeply', () => {
  it('a config file of 100,000 nested arrays is named, not a stack overflow', async () => {
    const file = path.join(home, 'deep-config.json');
    fs.writeFileSync(file, `{"algorithm":"seqgrpo","notes":${deep(100_000)}}`);
    expectOneLine(
      await cli(['train', '--config', file, '--home', home]),
      new RegExp(`^mars-lab: ${file}: the config nested 100001 levels deep \\(the limit is 256\\)`),
    );
  });

  it("a run's run.json of 100,000 nested arrays is named by show, resume and export", async () => {
    const id = '20261201-000000-deep-0002';
    const dir = path.join(home, 'runs', id);
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'run.json');
    fs.writeFileSync(
      file,
      `{"id":"${id}","createdAt":"2026-12-01T00:00:00Z","algorithm":"seqgrpo","config":${deep(100_000)},"engineVersion":"x","seed":1,"status":"stopped","statusAt":"2026-12-01T00:00:00Z","tags":[],"notes":""}`,
    );
    for (const args of [
      ['show', id],
      ['resume', id],
      ['export', id, '--csv'],
    ]) {
      expectOneLine(
        await cli([...args, '--home', home]),
        new RegExp(`^mars-lab: ${file}: run.json nested 100001 levels deep`),
      );
    }
    fs.rmSync(dir, { recursive: true });
  });
});

describe('the mapper', () => {
  afterEach(resetCliContext);

  /** An error as Node raises it for a failed system call. */
  function errno(code: string, syscall: string, file?: string): NodeJS.ErrnoException {
    const e = new Error(`${code}: ${syscall}${file ? ` '${file}'` : ''}`) as NodeJS.ErrnoException;
    e.code = code;
    e.errno = -1;
    e.syscall = syscall;
    if (file) e.path = file;
    return e;
  }

  it('a full disk while a run appends its metrics names the log and the run to resume', () => {
    // A real write(2) failure: appending to /dev/full fails with ENOSPC, which names no file by itself.
    const log = new JsonlAppender('/dev/full');
    let caught: unknown;
    try {
      log.append({ step: 1 });
    } catch (err) {
      caught = err;
    } finally {
      log.close();
    }
    expect((caught as NodeJS.ErrnoException).code).toBe('ENOSPC');
    expect(describeFailure(caught)).toEqual({
      message: 'no space left on device writing /dev/full: free space, then run the command again',
      exitCode: 2,
    });
    noteRun('20261201-000000-seqgrpo-ab12');
    expect(describeFailure(caught).message).toBe(
      'no space left on device writing /dev/full: free space, then continue with: mars-lab resume 20261201-000000-seqgrpo-ab12',
    );
    const inRun = errno('ENOSPC', 'write', '/h/runs/20261201-000000-x-0001/metrics.jsonl');
    resetCliContext();
    expect(describeIoError(inRun)).toBe(
      'no space left on device writing /h/runs/20261201-000000-x-0001/metrics.jsonl: free space, then continue with: mars-lab resume 20261201-000000-x-0001',
    );
  });

  it('EROFS, EACCES, EISDIR and EMFILE each say what to do', () => {
    expect(describeIoError(errno('EROFS', 'open', '/mnt/ro/out.csv'))).toBe(
      '/mnt/ro/out.csv is on a read-only file system: write to a writable place (another --out, --home DIR or MARS_LAB_HOME)',
    );
    expect(describeIoError(errno('EROFS', 'open', '/mnt/ro/runs/r1/metrics.jsonl'))).toBe(
      '/mnt/ro/runs/r1/metrics.jsonl is on a read-only file system: choose a writable home (--home DIR or MARS_LAB_HOME)',
    );
    expect(describeIoError(errno('EACCES', 'open', '/srv/x.json'))).toBe(
      'permission denied on /srv/x.json: check the permissions of /srv/x.json and its folder (ls -ld), or use another place',
    );
    expect(describeIoError(errno('EISDIR', 'read', '/srv/config'))).toBe(
      '/srv/config is a folder, expected a file: name a file',
    );
    expect(describeIoError(errno('EMFILE', 'open', '/h/runs/r2/events.jsonl'))).toBe(
      'too many open files (opening /h/runs/r2/events.jsonl): raise the limit (ulimit -n 4096), then continue with: mars-lab resume r2',
    );
    for (const code of ['ENOSPC', 'EROFS', 'EACCES', 'EISDIR', 'EMFILE']) {
      expect(describeFailure(errno(code, 'open', '/x')).exitCode).toBe(2);
    }
  });

  it('a stack overflow is one line naming the inputs; a bug keeps its stack; a UserError keeps its lines', () => {
    noteInput('/cfg/deep.json');
    const overflow = new RangeError('Maximum call stack size exceeded');
    expect(describeFailure(overflow)).toEqual({
      message: expect.stringMatching(/^an input is nested too deeply to process .*check \/cfg\/deep\.json;/),
      exitCode: 2,
    });
    const bug = describeFailure(new TypeError('x is undefined'));
    expect(bug.exitCode).toBe(1);
    expect(bug.stack).toMatch(/TypeError: x is undefined/);
    expect(describeFailure(new UserError('a.json: first\nb.json: second \x1b]0;t\x07'))).toEqual({
      message: 'a.json: first\nb.json: second \\x1b]0;t\\x07',
      exitCode: 2,
    });
  });

  it('counts nesting without parsing, skipping brackets inside strings', () => {
    expect(jsonNestingDepth('{"a":[1,{"b":"[[[[\\"]]"}]}')).toBe(3);
    expect(jsonNestingDepth(deep(1000))).toBe(1000);
  });
});
