/**
 * How `eval` and `compare` print their results in a terminal (without --json): one evaluation (its checkpoint, the
 * evaluation's identity, each metric, where the per-item outcomes are), shared by eval's checkpoint and endpoint
 * branches, and a comparison of two (the metric table, the flipped items, the paired tests). Text that comes from
 * files or endpoints is shown through terminalText, control characters escaped.
 */
import type { CheckpointEval, Comparison } from '../runs/evaluation/evaluation';
import { terminalText as tt } from './terminalText';

/** One evaluation's lines: checkpoint (and whether it came from the cache), identity, metrics, outcomes file. */
export function printEvaluation(r: CheckpointEval): void {
  console.log(`${tt(r.checkpoint)}${r.cached ? ' (cached)' : ''}`);
  console.log(
    `evaluation: ${Object.entries(r.identity)
      .map(([k, v]) => `${k}=${tt(v)}`)
      .join(' ')}`,
  );
  for (const [k, v] of Object.entries(r.metrics)) console.log(`  ${tt(k).padEnd(20)} ${v.toFixed(4)}`);
  console.log(`per-item outcomes: ${tt(r.file)}`);
}

function pct(x: number): string {
  return `${(100 * x).toFixed(1)}%`;
}

/** A comparison's lines: A and B, the items, the metric table, flipped items, McNemar, bootstrap, accuracy. */
export function printComparison(c: Comparison): void {
  console.log(
    `A: ${c.a.checkpoint}${c.a.cached ? ' (cached)' : ''}\nB: ${c.b.checkpoint}${c.b.cached ? ' (cached)' : ''}`,
  );
  console.log(
    `items: ${c.a.items.length} (${Object.entries(c.identity)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')})\n`,
  );
  console.log(`${'metric'.padEnd(20)} ${'A'.padStart(9)} ${'B'.padStart(9)} ${'B − A'.padStart(9)}`);
  for (const m of c.metrics) {
    console.log(
      `${m.name.padEnd(20)} ${m.a.toFixed(4).padStart(9)} ${m.b.toFixed(4).padStart(9)} ${((m.diff >= 0 ? '+' : '') + m.diff.toFixed(4)).padStart(9)}`,
    );
  }
  console.log(
    `\nflipped right → wrong: ${c.flippedToWrong.length}${c.flippedToWrong.length ? ` (${c.flippedToWrong.slice(0, 8).map(tt).join(' | ')}${c.flippedToWrong.length > 8 ? ' …' : ''})` : ''}`,
  );
  console.log(
    `flipped wrong → right: ${c.flippedToRight.length}${c.flippedToRight.length ? ` (${c.flippedToRight.slice(0, 8).map(tt).join(' | ')}${c.flippedToRight.length > 8 ? ' …' : ''})` : ''}`,
  );
  console.log(
    `McNemar exact test on the ${c.mcnemar.n01 + c.mcnemar.n10} discordant items: p = ${c.mcnemar.pValue.toPrecision(3)}`,
  );
  console.log(
    `score difference (B − A): ${c.scoreDiff.meanDiff.toFixed(4)}, 95% paired bootstrap interval [${c.scoreDiff.low.toFixed(4)}, ${c.scoreDiff.high.toFixed(4)}]`,
  );
  console.log(`accuracy: A ${pct(c.a.metrics.accuracy ?? NaN)}, B ${pct(c.b.metrics.accuracy ?? NaN)}`);
}
