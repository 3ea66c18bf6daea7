/**
 * Progress of long work: a bar (cli-progress) on a terminal, one JSON object per line with --json, and nothing when
 * stderr is not a terminal and --json was not asked for (logs of scripted runs stay clean).
 */
import cliProgress from 'cli-progress';
import type { Progress } from '../runs/runLoop';

export interface ProgressSink {
  update(p: Progress): void;
  stop(): void;
}

function fmt(x: number | undefined): string {
  return x === undefined || !Number.isFinite(x) ? '–' : Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(3);
}

export function progressSink(opts: { json?: boolean; label: string; keyMetric: string }): ProgressSink {
  if (opts.json) {
    return {
      update: (p) =>
        process.stdout.write(
          JSON.stringify({
            type: 'progress',
            runId: p.runId,
            step: p.step,
            totalSteps: p.totalSteps,
            tokensPerSec: p.tokensPerSec,
            elapsedMs: p.elapsedMs,
            metrics: p.metrics,
          }) + '\n',
        ),
      stop: () => {},
    };
  }
  if (!process.stderr.isTTY) return { update: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar(
    {
      format: `${opts.label} |{bar}| step {value}/{total} | ${opts.keyMetric} {key} | {tps} tok/s | ETA {eta_formatted}`,
      stream: process.stderr,
      hideCursor: true,
      etaBuffer: 20,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update(p) {
      if (!started) {
        bar.start(p.totalSteps, p.step - 1, { key: '–', tps: '–' });
        started = true;
      }
      bar.update(p.step, {
        key: fmt(p.metrics[opts.keyMetric]),
        tps: Math.round(p.tokensPerSec).toLocaleString('en-US'),
      });
    },
    stop: () => started && bar.stop(),
  };
}
