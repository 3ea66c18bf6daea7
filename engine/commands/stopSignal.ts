/**
 * The wait of the commands that serve until told to stop (`serve`, `serve-model`): the first SIGINT (Ctrl-C) or
 * SIGTERM ends it, and both handlers are removed again, so the caller closes its servers and the process exits.
 */

/** Resolves at the first SIGINT or SIGTERM. */
export function untilStopSignal(): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
