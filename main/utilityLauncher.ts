/**
 * Runs and evaluations in Electron: each `run-worker` job gets its own `utilityProcess` (a Node.js child that Electron
 * manages), so main only brokers and the window stays responsive while a run trains (docs/architecture.md "Processes").
 * It implements the engine's RunLauncher, the same interface web mode implements with child_process.
 */
import { utilityProcess } from 'electron';
import { lineSplitter, type RunLauncher } from '../engine/api/workers/runLauncher';

/** `bin` is the CLI's entry point (engine/bin/mars-lab.mjs), which starts the built engine (out/cli) or its sources. */
export function utilityRunLauncher(bin: string): RunLauncher {
  return {
    launch(args, handlers) {
      const child = utilityProcess.fork(bin, [...args], { stdio: 'pipe', serviceName: 'mars-lab run' });
      child.stdout?.on(
        'data',
        lineSplitter((line) => handlers.onStdoutLine(line)),
      );
      child.stderr?.on('data', (chunk: Buffer | string) => handlers.onStderr(String(chunk)));
      child.once('exit', (code: number) => handlers.onExit(code));
      return {
        get pid() {
          return child.pid;
        },
        // SIGTERM on POSIX: the run finishes its step, writes a checkpoint and stops.
        terminate: () => void child.kill(),
      };
    },
  };
}
