/**
 * How the host starts the processes that train and evaluate (DESIGN.md "Processes": the host only brokers). A launcher
 * runs `mars-lab run-worker <job>` in a new process: web mode and tests use `nodeRunLauncher` (child_process), Electron
 * main implements the same interface with `utilityProcess.fork` (main/utilityLauncher.ts).
 *
 * The worker speaks one JSON object per stdout line (runWorker.ts); stopping is SIGTERM, which a run answers as it
 * answers Ctrl-C: finish the step, write a checkpoint, mark the run 'stopped'.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

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

/** The CLI's entry point (it registers tsx, so the engine runs from its TypeScript sources). */
export const CLI_BIN = fileURLToPath(new URL('../bin/mars-lab.mjs', import.meta.url));

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
      child.stdout.on('data', lineSplitter(handlers.onStdoutLine));
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
