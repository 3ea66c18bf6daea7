/**
 * The command line: `npx mars-lab <command>`. Thin: each command (engine/commands/) parses its flags, calls the engine
 * and prints. Errors a user caused (UserError) are printed without a stack trace and exit with code 2.
 */
import { Command } from 'commander';
import { registerDoctorCommand } from './commands/doctorCommand';
import { registerEvalCommands } from './commands/evalCommands';
import { registerModelCommands } from './commands/modelCommands';
import { registerRunCommands } from './commands/runCommands';
import { registerServeCommand } from './commands/serveCommand';
import { registerWorkerCommand } from './commands/workerCommand';
import { UserError } from './userError';
import { ENGINE_VERSION } from './version';

export function buildProgram(): Command {
  const program = new Command('mars-lab')
    .description('A laboratory for multi-agent reinforcement learning of language-model policies (MARS, MARTI-MARS²).')
    .version(ENGINE_VERSION);
  registerDoctorCommand(program);
  registerModelCommands(program);
  registerRunCommands(program);
  registerEvalCommands(program);
  registerServeCommand(program);
  registerWorkerCommand(program);
  return program;
}

const program = buildProgram();
program
  .parseAsync(process.argv)
  .then(() => process.exit(0))
  .catch((err: unknown) => {
    const known = err instanceof UserError;
    console.error(`mars-lab: ${(err as Error)?.message ?? String(err)}`);
    if (!known && err instanceof Error && err.stack) console.error(err.stack);
    process.exit(known ? 2 : 1);
  });
