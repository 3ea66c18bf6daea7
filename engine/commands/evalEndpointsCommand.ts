/**
 * The `eval` command's endpoint branch (engine/commands/evalCommands.ts hands over when the config names endpoint
 * policies): Ctrl-C cancels the requests in flight and keeps every answered one, warnings go to stderr, and the
 * results print as eval's do.
 */
import type { RunConfig } from '../runs/config/configSchema';
import { terminalText as tt } from './terminalText';
import { evaluateWithEndpoints } from '../runs/evaluation/evaluateEndpoints';
import { printEvaluation } from './evalPrintout';

export async function runEndpointEval(
  home: string,
  config: RunConfig,
  opts: { checkpoint?: string; json?: boolean; fresh?: boolean },
): Promise<void> {
  const abort = new AbortController();
  const stop = (): void => abort.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    const r = await evaluateWithEndpoints(home, config, {
      checkpoint: opts.checkpoint,
      signal: abort.signal,
      fresh: opts.fresh,
      onWarning: (line) => console.error(`mars-lab: warning: ${tt(line)}`),
    });
    if (opts.json) return console.log(JSON.stringify(r));
    printEvaluation(r); // r.cached is always false here: endpoint evaluations replay a journal, not a cache
    console.log(`requests: ${r.journal.fresh} asked, ${r.journal.replayed} replayed from ${tt(r.journal.file)}`);
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
