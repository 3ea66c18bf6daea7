/**
 * How the host starts the processes that train and evaluate (docs/architecture.md "Processes": the host only brokers). A launcher
 * runs `mars-lab run-worker <job>` in a new process: web mode and tests use `nodeRunLauncher` (child_process), Electron
 * main implements the same interface with `utilityProcess.fork` (main/utilityLauncher.ts).
 *
 * The worker speaks one JSON object per stdout line (runWorker.ts); stopping is SIGTERM, which a run answers as it
 * answers Ctrl-C: finish the step, write a checkpoint, mark the run 'stopped'.
 *
 * An evaluation's or comparison's result (every item's whole episode or search tree: hundreds of KB to MB) does not
 * travel as a stdout line, which a process ending early can cut at the pipe's buffer (64 KiB): the worker writes it to
 * a file under `<home>/evals/worker-results/` (atomically) and says only its path; `workerResult` here reads it back,
 * validates it against the api contract, and deletes it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../base/projectRoot';
import { readHomeText } from '../../runs/folder/homeFile';
import { z } from 'zod';
import { apiSchemas, checkpointEvalSchema } from '../contract/contract';
import { jsonParseProblem } from '../../base/boundedText';

/** A worker's result file: every item's episode or tree of an evaluation (hundreds of KB to MB). */
const MAX_RESULT_BYTES = 1024 * 1024 * 1024;

export interface RunProcessHandlers {
  /** Each complete line the process writes to stdout. */
  onStdoutLine(line: string): void;
  onStderr(text: string): void;
  /** Once, when the process has ended (code null: killed by a signal). */
  onExit(code: number | null): void;
}

export interface RunProcess {
  readonly pid: number | undefined;
  /** Ask the process to stop (SIGTERM). */
  terminate(): void;
}

export interface RunLauncher {
  /** Start `mars-lab <args…>` (args[0] is the command, e.g. 'run-worker'). */
  launch(args: readonly string[], handlers: RunProcessHandlers): RunProcess;
}

/**
 * The CLI's entry point (it starts the built engine, or the TypeScript sources through tsx), from the project root
 * (engine/base/projectRoot.ts), so it resolves the same from the sources and from the bundle in out/cli/.
 */
export const CLI_BIN = path.join(PROJECT_ROOT, 'engine', 'bin', 'mars-lab.mjs');

/** Splits a byte stream into lines; the returned function takes each chunk. */
export function lineSplitter(onLine: (line: string) => void): (chunk: string | Buffer) => void {
  let buffer = '';
  return (chunk) => {
    buffer += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    let newline: number;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (line) onLine(line);
    }
  };
}

/** child_process.spawn of this Node.js on the CLI bin: web mode (`mars-lab serve`) and tests. */
export function nodeRunLauncher(opts: { bin?: string; env?: NodeJS.ProcessEnv } = {}): RunLauncher {
  const bin = opts.bin ?? CLI_BIN;
  return {
    launch(args, handlers) {
      const child = spawn(process.execPath, [bin, ...args], {
        env: { ...process.env, ...opts.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout.on(
        'data',
        lineSplitter((line) => handlers.onStdoutLine(line)),
      );
      child.stderr.on('data', (chunk: Buffer) => handlers.onStderr(chunk.toString('utf8')));
      let exited = false;
      const exit = (code: number | null): void => {
        if (exited) return;
        exited = true;
        handlers.onExit(code);
      };
      child.on('error', (err) => {
        handlers.onStderr(`could not start ${bin}: ${err.message}\n`);
        exit(null);
      });
      child.on('close', (code) => exit(code));
      return {
        pid: child.pid,
        terminate: () => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        },
      };
    },
  };
}

// ---- results that travel as files ---------------------------------------------------------------------------------

/** Where workers leave results for their host (beside the evaluation cache, `<home>/evals/<key>/eval.json`). */
export function workerResultsDir(home: string): string {
  return path.join(home, 'evals', 'worker-results');
}

/** A result file's name: `<ms since the epoch>-<pid>-<hex>.json`; nothing else is ever read or deleted. */
const RESULT_FILE_NAME = /^\d+-\d+-[0-9a-f]+\.json$/;

/** What a worker's evaluation gives (runs/evaluation/evaluation.ts CheckpointEval), before the host adds the run and step. */
export const workerEvalSchema = checkpointEvalSchema.omit({ runId: true, step: true });
export type WorkerEval = z.output<typeof workerEvalSchema>;

/** What a worker's comparison gives (runs/evaluation/evaluation.ts Comparison; its numbers may be null where JSON has no NaN). */
export const workerComparisonSchema = apiSchemas.compareCheckpoints.response.extend({
  a: workerEvalSchema,
  b: workerEvalSchema,
});
export type WorkerComparison = z.output<typeof workerComparisonSchema>;

/**
 * For a host's wait on a worker: given each stdout line (parsed), returns undefined until the line
 * `{"type":"result","file":…}` comes, then a function that reads that file, validates it with `schema`, deletes it
 * and returns the result. The reading is left to the caller, after its wait, so a bad file rejects its request
 * rather than throwing inside a stream handler. The file must be a result file of `home` (a line cannot name another).
 */
export function workerResult<S extends z.ZodType>(
  home: string,
  schema: S,
): (line: Record<string, unknown>) => (() => z.output<S>) | undefined {
  return (line) => {
    if (line.type !== 'result') return undefined;
    return () => {
      const file = typeof line.file === 'string' ? line.file : '';
      const dir = workerResultsDir(home);
      if (!(RESULT_FILE_NAME.test(path.basename(file)) && path.resolve(path.dirname(file)) === path.resolve(dir))) {
        throw new Error(
          `the worker's result line names no result file of ${dir} (${JSON.stringify(line).slice(0, 200)})`,
        );
      }
      let text: string;
      try {
        // under the home: never a FIFO (the host would block in open()) nor a link out of it (homeFile.ts)
        text = readHomeText(file, MAX_RESULT_BYTES) ?? '';
      } finally {
        fs.rmSync(file, { force: true });
      }
      let raw: unknown;
      try {
        raw = JSON.parse(text);
      } catch (err) {
        throw new Error(`the worker's result ${file} is not JSON (${jsonParseProblem(err)})`, { cause: err });
      }
      const parsed = schema.safeParse(raw);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw new Error(
          `the worker's result ${file} is not the expected shape (${issue.path.join('.') || 'the result'}: ${issue.message})`,
        );
      }
      return parsed.data;
    };
  };
}
