/**
 * The `eval` command's endpoint branch (engine/commands/evalCommands.ts hands over when the config names endpoint
 * policies): Ctrl-C cancels the requests in flight and keeps every answered one, warnings go to stderr, and the
 * results print as eval's do.
 */
import type { RunConfig } from '../runs/config/configSchema';
import { terminalText as tt } from './terminalText';
import { evaluateWithEndpoints } from '../runs/evaluation/evaluateEndpoints';

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
    console.log(tt(r.checkpoint));
    console.log(
      `evaluation: ${Object.entries(r.identity)
        .map(([k, v]) => `${k}=${tt(v)}`)
        .join(' ')}`,
    );
    for (const [k, v] of Object.entries(r.metrics)) console.log(`  ${tt(k).padEnd(20)} ${v.toFixed(4)}`);
    console.log(`per-item outcomes: ${tt(r.file)}`);
    console.log(`requests: ${r.journal.fresh} asked, ${r.journal.replayed} replayed from ${tt(r.journal.file)}`);
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
