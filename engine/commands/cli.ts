/**
 * The command line: `npx mars-lab <command>`. Thin: each command (engine/commands/) parses its flags, calls the engine
 * and prints. Errors a user caused (UserError) and failures of the machine (a full disk, a read-only file system, a
 * folder where a file was expected, too many open files, an input nested too deeply: engine/commands/ioErrors.ts) are
 * printed as one line without a stack trace and exit with code 2; anything else is a bug and keeps its stack (code 1).
 *
 * The process exits only once stdout and stderr have drained: output written to a pipe (`mars-lab … --json | jq`) is
 * queued in memory when the reader is slower than the writer, and `process.exit` would drop what is still queued.
 * (It exits explicitly at all because a TensorFlow.js backend may keep the event loop alive after the command.)
 */
import { Command } from 'commander';
import { registerCodeCommands } from './codeCommands';
import { registerDoctorCommand } from './doctorCommand';
import { registerEvalCommands } from './evalCommands';
import { registerJobsCommand } from './jobsCommand';
import { registerExportCommand } from './exportCommand';
import { registerImportCommand } from './importCommand';
import { describeFailure } from './ioErrors';
import { registerModelCommands } from './modelCommands';
import { registerProbeCommand } from './probeCommand';
import { registerRunCommands } from './runCommands';
import { registerServeCommand } from './serveCommand';
import { registerServeModelCommand } from './serveModelCommand';
import { registerStudyCommand } from './studyCommand';
import { registerWorkerCommand } from './workerCommand';
import { ENGINE_VERSION } from '../base/version';

export function buildProgram(): Command {
  const program = new Command('mars-lab')
    .description('A laboratory for multi-agent reinforcement learning of language-model policies (MARS, MARTI-MARS²).')
    .version(ENGINE_VERSION);
  registerDoctorCommand(program);
  registerModelCommands(program);
  registerRunCommands(program);
  registerProbeCommand(program);
  registerExportCommand(program);
  registerImportCommand(program);
  registerEvalCommands(program);
  registerServeCommand(program);
  registerServeModelCommand(program);
  registerStudyCommand(program);
  registerJobsCommand(program);
  registerWorkerCommand(program);
  registerCodeCommands(program);
  return program;
}

/** Resolves once everything written to `stream` so far has been handed to the OS (or the stream is gone). */
function drained(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || !stream.writable || stream.writableLength === 0) return resolve();
    // Writes complete in order, so the callback of an empty write runs after every earlier one has been flushed.
    stream.write('', () => resolve());
  });
}

let exiting = false;

async function exitAfterDrain(code: number): Promise<void> {
  if (exiting) return;
  exiting = true;
  await Promise.all([drained(process.stdout), drained(process.stderr)]);
  process.exit(code);
}

function fail(err: unknown): void {
  if (exiting) return;
  const f = describeFailure(err);
  process.stderr.write(`mars-lab: ${f.message}\n`);
  if (f.stack) process.stderr.write(`${f.stack}\n`);
  void exitAfterDrain(f.exitCode);
}

// A reader that goes away (`mars-lab export RUN --csv | head`) wanted no more output: stop quietly, not with a stack.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  fail(err);
});
process.stderr.on('error', () => {
  // Nowhere left to report to.
});
process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);

const program = buildProgram();
program
  .parseAsync(process.argv)
  .then(() => exitAfterDrain(0))
  .catch(fail);
