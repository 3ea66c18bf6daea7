/**
 * The policy-gradient smoke test (issue: foundation): a tiny Llama learns, by GRPO alone, to emit a target token
 * sequence from a toy reward (tests/helpers/grpoToy.ts). The same loop checks that training leaks no tensors.
 *
 * Several seeds, not one (issue 28): a seeded learning threshold is a test of one float summation order. At one seed
 * this test failed on an Intel Xeon (OpenBLAS detects "Prescott" there) while it passed on the AMD EPYC it was written
 * on. Measured over 20 seeds × 6 kernel paths (OpenBLAS Cooperlake, Prescott, Haswell, SkylakeX, the own kernel, the
 * stock wasm kernels; docs/results/kernel-audit.md): a seed reaches the target (best 10-step window > 0.95) in 116 of
 * 120 runs, holds it (last 100 steps > 0.85) in 111, ends with the greedy answer right in 108. Once right, most groups
 * are all-equal (zero advantage) while Adam's second moments decay, and the next slip gets a z-score near −5: a large
 * step that can flip a position for a while. So each criterion is asserted for a majority of 7 seeds, which fails by
 * chance with probability ≈ 0.3% or less at the measured rates, while a policy that does not learn fails every one.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { trainToyGrpo, toyFigures, type ToyRun } from '../helpers/grpoToy';
import { useBackend } from '../helpers/backends';

const SEEDS = [0, 1, 2, 3, 4, 5, 6];

describe('GRPO on a toy reward (wasm)', () => {
  const runs: ToyRun[] = [];
  beforeAll(async () => {
    await useBackend('wasm');
    for (const seed of SEEDS) runs.push(await trainToyGrpo(seed));
  }, 600_000);

  it('the reward curve rises: most seeds learn to emit the target sequence and hold it', () => {
    const figures = runs.map(toyFigures);
    const report = figures
      .map(
        (f, i) =>
          `seed ${SEEDS[i]}: first ${f.first.toFixed(2)} best ${f.best.toFixed(2)} last100 ${f.last100.toFixed(2)} greedy ${f.greedyOk}`,
      )
      .join('; ');
    // A random policy matches 1/12 of the positions: every seed starts low.
    for (const f of figures) expect(f.first, report).toBeLessThan(0.35);
    expect(figures.filter((f) => f.best > 0.95).length, report).toBeGreaterThanOrEqual(5);
    expect(figures.filter((f) => f.last100 > 0.85).length, report).toBeGreaterThanOrEqual(4);
    expect(figures.filter((f) => f.greedyOk).length, report).toBeGreaterThanOrEqual(4);
  });

  it('leaks no tensors: the count after step 200 equals the count after step 10', () => {
    for (const run of runs) expect(run.tensorsAt.get(200)).toBe(run.tensorsAt.get(10));
  });
});
