import { describe, expect, it } from 'vitest';
import { poolAdvantages, type TrajectoryOutcome } from '../../../engine/mars/advantagePools';
import { Rng } from '../../../engine/random/prng';

const trajs = (r: number[], n: number[]): TrajectoryOutcome[] => r.map((reward, k) => ({ reward, sys1Count: n[k]! }));

function expectClose(got: number[], want: number[], tol: number): void {
  expect(got.length).toBe(want.length);
  got.forEach((x, i) => expect(Math.abs(x - want[i]!)).toBeLessThan(tol));
}

const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

describe('separate pools (docs/algorithms.md §2.5, §7.6)', () => {
  it('reproduces the worked example r = [1,0], n = [3,1]', () => {
    // With eps = 0 the example's values are exact.
    const exact = poolAdvantages(trajs([1, 0], [3, 1]), { eps: 0 });
    expectClose(exact.sys2, [Math.SQRT1_2, -Math.SQRT1_2], 1e-12);
    expectClose(exact.sys1[0]!, [0.5, 0.5, 0.5], 1e-12);
    expectClose(exact.sys1[1]!, [-1.5], 1e-12);
    // The default eps = 1e-6 is added to σ, which shifts each value by |A|·eps/σ (3e-6 for −1.5 with σ = 0.5).
    const a = poolAdvantages(trajs([1, 0], [3, 1]));
    expect(a.sys1.map((x) => x.length)).toEqual([3, 1]);
    expectClose(a.sys2, [Math.SQRT1_2, -Math.SQRT1_2], 2e-6);
    expectClose(a.sys1[0]!, [0.5, 0.5, 0.5], 2e-6);
    expectClose(a.sys1[1]!, [-1.5], 4e-6);
    expect(a.sys1[1]![0]).toBe(-0.75 / (0.5 + 1e-6));
    // The same trajectory gets different advantages in the two pools.
    expect(Math.abs(a.sys2[1]! - a.sys1[1]![0]!)).toBeGreaterThan(0.5);
    expect(poolAdvantages(trajs([1, 0], [3, 1]), { pool: 'separate' })).toEqual(a);
  });

  it('uses eps 1e-6 by default and passes eps, stdMode and singleton through', () => {
    // σ of [1, 0] is 1/√2 (unbiased): A = 0.5 / (1/√2 + eps).
    const a = poolAdvantages(trajs([1, 0], [1, 1]));
    expect(a.sys2[0]).toBe(0.5 / (Math.SQRT1_2 + 1e-6));
    expect(poolAdvantages(trajs([1, 0], [1, 1]), { eps: 0.5 }).sys2[0]).toBe(0.5 / (Math.SQRT1_2 + 0.5));
    expect(poolAdvantages(trajs([1, 0], [3, 1]), { eps: 0, stdMode: 'population' }).sys2).toEqual([1, -1]);
    // M = 1 under the verl singleton rule: A = r / (1 + eps).
    const verl = poolAdvantages(trajs([1, 0], [1, 0]), { singleton: 'verl', eps: 1e-6 });
    expect(verl.sys1).toEqual([[1 / (1 + 1e-6)], []]);
  });

  it('sys1[k] has sys1Count_k entries, n_k = 0 included', () => {
    const a = poolAdvantages(trajs([1, 0, 1, 0], [0, 2, 0, 3]));
    expect(a.sys1.map((x) => x.length)).toEqual([0, 2, 0, 3]);
    expect(a.sys2.length).toBe(4);
    expect(poolAdvantages([])).toEqual({ sys2: [], sys1: [] });
  });

  it('rejects a sys1Count that is not a whole number ≥ 0', () => {
    expect(() => poolAdvantages(trajs([1, 0], [1, -1]))).toThrow(/trajectory 1 has sys1Count -1/);
    expect(() => poolAdvantages(trajs([1, 0], [1.5, 1]))).toThrow(/sys1Count 1.5/);
  });
});

describe('joint pool (docs/algorithms.md §2.5, §6.6)', () => {
  it('z-scores System 2 and System 1 rewards together, computed by hand on the worked example', () => {
    // Joint pool [1, 0 | 1, 1, 1, 0]: μ = 2/3, Σ(r−μ)² = 4·(1/9) + 2·(4/9) = 4/3, σ = sqrt((4/3)/5) = sqrt(4/15).
    const s = Math.sqrt(4 / 15) + 1e-6;
    const hi = 1 / 3 / s; // ≈ +0.6455
    const lo = -2 / 3 / s; // ≈ −1.2910
    const a = poolAdvantages(trajs([1, 0], [3, 1]), { pool: 'joint' });
    expectClose(a.sys2, [hi, lo], 1e-12);
    expectClose(a.sys1[0]!, [hi, hi, hi], 1e-12);
    expectClose(a.sys1[1]!, [lo], 1e-12);
    expect(hi).toBeCloseTo(0.6455, 4);
    expect(lo).toBeCloseTo(-1.291, 4);
  });

  it('in the joint pool a trajectory has one advantage for both systems', () => {
    const rng = new Rng(5);
    for (let t = 0; t < 50; t++) {
      const G = 2 + rng.int(7);
      const a = poolAdvantages(
        Array.from({ length: G }, () => ({ reward: rng.int(2), sys1Count: rng.int(4) })),
        { pool: 'joint' },
      );
      a.sys1.forEach((xs, k) => xs.forEach((x) => expect(x).toBe(a.sys2[k])));
    }
  });
});

describe('degenerate and non-degenerate pools (docs/algorithms.md §2.9, §7.10, §7.11)', () => {
  it('all-equal rewards give exactly 0 in both pools and in the joint pool', () => {
    for (const r of [
      [1, 1, 1],
      [0, 0, 0],
      [0.1, 0.1, 0.1],
    ]) {
      for (const pool of ['separate', 'joint'] as const) {
        const a = poolAdvantages(trajs(r, [2, 0, 3]), { pool });
        expect([...a.sys2, ...a.sys1.flat()].every((x) => x === 0)).toBe(true);
      }
    }
  });

  it('a System 1 pool of size 1 gives A1 = 0', () => {
    const a = poolAdvantages(trajs([1, 0, 0], [0, 1, 0]));
    expect(a.sys1).toEqual([[], [0], []]);
    expect(a.sys2[0]).toBeGreaterThan(0);
  });

  it('System 1 samples all from one trajectory give A1 = 0 even when A2 ≠ 0', () => {
    const a = poolAdvantages(trajs([1, 0, 0, 1], [0, 0, 4, 0]));
    expect(a.sys1[2]).toEqual([0, 0, 0, 0]);
    expect(a.sys2.every((x) => x !== 0)).toBe(true);
  });

  it('z-scores of non-degenerate pools sum to ≈ 0, and the separate System 1 pool has unit (unbiased) std', () => {
    const rng = new Rng(9);
    let checked = 0;
    for (let t = 0; t < 200; t++) {
      const G = 2 + rng.int(8);
      const ts = Array.from({ length: G }, () => ({
        reward: rng.next() < 0.5 ? rng.int(2) : rng.next(),
        sys1Count: rng.int(5),
      }));
      const sep = poolAdvantages(ts, { eps: 0 });
      const joint = poolAdvantages(ts, { pool: 'joint', eps: 0 });
      const a1 = sep.sys1.flat();
      if (a1.some((x) => x !== 0)) {
        expect(Math.abs(sum(a1))).toBeLessThan(1e-9);
        const m = a1.length;
        expect(Math.sqrt(sum(a1.map((x) => x * x)) / (m - 1))).toBeCloseTo(1, 9);
        checked++;
      }
      if (sep.sys2.some((x) => x !== 0)) expect(Math.abs(sum(sep.sys2))).toBeLessThan(1e-9);
      const all = [...joint.sys2, ...joint.sys1.flat()];
      if (all.some((x) => x !== 0)) expect(Math.abs(sum(all))).toBeLessThan(1e-9);
    }
    expect(checked).toBeGreaterThan(100);
  });

  it('the System 1 baseline is weighted by tool calls, not by trajectories', () => {
    // r = [1, 0], n = [1, 3]: pool [1, 0, 0, 0] has mean 1/4, so the rewarded sample gets +1.5, not +0.707.
    const a = poolAdvantages(trajs([1, 0], [1, 3]));
    expectClose(a.sys1[0]!, [1.5], 4e-6);
    expectClose(a.sys1[1]!, [-0.5, -0.5, -0.5], 2e-6);
  });
});
