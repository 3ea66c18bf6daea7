import { describe, expect, it } from 'vitest';
import { Rng } from '../../../engine/random/prng';
import {
  defaultPosteriorConfig,
  drawPosterior,
  gaussianParams,
  newPosterior,
  observe,
  posteriorMean,
  summarizePosterior,
  type GaussianPosterior,
} from '../../../engine/marti/search/posterior';

describe('Beta posterior (docs/algorithms.md §3.5)', () => {
  it('starts at the Jeffreys prior and adds s to a and 1 − s to b', () => {
    const cfg = defaultPosteriorConfig('beta');
    const p = newPosterior(cfg);
    expect(p).toEqual({ kind: 'beta', a: 0.5, b: 0.5, n: 0 });
    observe(p, 1); // a = 1.5, b = 0.5
    expect(p).toMatchObject({ a: 1.5, b: 0.5, n: 1 });
    observe(p, 0); // a = 1.5, b = 1.5
    expect(p).toMatchObject({ a: 1.5, b: 1.5, n: 2 });
    observe(p, 0.25); // a = 1.75, b = 2.25
    expect(p).toMatchObject({ a: 1.75, b: 2.25, n: 3 });
    expect(posteriorMean(p, cfg)).toBeCloseTo(1.75 / 4, 15);
    expect(summarizePosterior(p, cfg)).toEqual({ kind: 'beta', n: 3, a: 1.75, b: 2.25, mean: 0.4375 });
  });

  it('rejects observations outside [0, 1]', () => {
    const p = newPosterior(defaultPosteriorConfig('beta'));
    expect(() => observe(p, 1.5)).toThrow(/\[0, 1\]/);
    expect(() => observe(p, -0.1)).toThrow(/\[0, 1\]/);
    expect(() => observe(p, NaN)).toThrow(/finite/);
    expect(p).toMatchObject({ a: 0.5, b: 0.5, n: 0 });
  });

  it('draws have the Beta mean (seeded, loose bound)', () => {
    const cfg = defaultPosteriorConfig('beta');
    const p = newPosterior(cfg);
    observe(p, 1);
    observe(p, 1);
    observe(p, 0); // Beta(2.5, 1.5): mean 0.625
    const rng = new Rng(3);
    let s = 0;
    const n = 20000;
    for (let i = 0; i < n; i++) s += drawPosterior(p, cfg, rng);
    expect(s / n).toBeGreaterThan(0.625 - 0.01);
    expect(s / n).toBeLessThan(0.625 + 0.01);
  });
});

describe('Normal-Inverse-Gamma posterior (docs/algorithms.md §3.5)', () => {
  const cfg = defaultPosteriorConfig('gaussian'); // m0 = 0, κ0 = 1, ν0 = 1, τ0² = 0.1

  it('has the release prior and the closed-form update after 1, 2 and 3 observations', () => {
    expect(cfg.gaussianPrior).toEqual({ m: 0, kappa: 1, nu: 1, tau2: 0.1 });
    const p = newPosterior(cfg) as GaussianPosterior;
    expect(gaussianParams(p, cfg.gaussianPrior)).toEqual({ m: 0, kappa: 1, nu: 1, tau2: 0.1 });

    observe(p, 1);
    // n = 1, x̄ = 1, S = 0: κ = 2, ν = 2, m = 1/2, τ² = (0.1 + 0 + (1·1/2)·1²)/2 = 0.3
    let g = gaussianParams(p, cfg.gaussianPrior);
    expect(g.kappa).toBe(2);
    expect(g.nu).toBe(2);
    expect(g.m).toBeCloseTo(0.5, 14);
    expect(g.tau2).toBeCloseTo(0.3, 14);

    observe(p, 0);
    // n = 2, x̄ = 1/2, S = 1/2: κ = 3, ν = 3, m = 1/3, τ² = (0.1 + 0.5 + (2/3)·(1/4))/3 = 23/90
    g = gaussianParams(p, cfg.gaussianPrior);
    expect(g.kappa).toBe(3);
    expect(g.nu).toBe(3);
    expect(g.m).toBeCloseTo(1 / 3, 14);
    expect(g.tau2).toBeCloseTo(23 / 90, 14);

    observe(p, 1);
    // n = 3, x̄ = 2/3, S = 2·(1/3)² + (2/3)² = 2/3: κ = 4, ν = 4, m = 2/4, τ² = (0.1 + 2/3 + (3/4)·(4/9))/4 = 0.275
    g = gaussianParams(p, cfg.gaussianPrior);
    expect(g.kappa).toBe(4);
    expect(g.nu).toBe(4);
    expect(g.m).toBeCloseTo(0.5, 14);
    expect(g.tau2).toBeCloseTo(0.275, 14);
    expect(p).toEqual({ kind: 'gaussian', n: 3, sum: 2, sumSq: 2 });
    expect(summarizePosterior(p, cfg)).toMatchObject({ kind: 'gaussian', n: 3, kappa: 4, nu: 4 });
  });

  it('uses the configured prior with non-binary observations', () => {
    const c = { ...cfg, gaussianPrior: { m: 1, kappa: 2, nu: 3, tau2: 0.5 } };
    const p = newPosterior(c) as GaussianPosterior;
    observe(p, 0.2);
    observe(p, -0.4);
    // n = 2, x̄ = −0.1, S = 0.09 + 0.09 = 0.18: κ = 4, ν = 5, m = (2·1 + 2·(−0.1))/4 = 0.45,
    // τ² = (3·0.5 + 0.18 + (2·2/4)·(1 − (−0.1))²)/5 = (1.5 + 0.18 + 1.21)/5 = 0.578
    const g = gaussianParams(p, c.gaussianPrior);
    expect(g.kappa).toBe(4);
    expect(g.nu).toBe(5);
    expect(g.m).toBeCloseTo(0.45, 14);
    expect(g.tau2).toBeCloseTo(0.578, 14);
    expect(posteriorMean(p, c)).toBeCloseTo(0.45, 14);
  });

  it('equal non-binary observations give S = 0 exactly (no negative from cancellation)', () => {
    const p = newPosterior(cfg) as GaussianPosterior;
    for (let i = 0; i < 7; i++) observe(p, 0.1);
    // n = 7, x̄ = 0.1, S = 0: τ² = (0.1 + (7/8)·0.01)/8
    const g = gaussianParams(p, cfg.gaussianPrior);
    expect(g.tau2).toBeCloseTo((0.1 + (7 / 8) * 0.01) / 8, 12);
    expect(g.tau2).toBeGreaterThan(0);
  });

  it('a draw is μ ~ Normal(mn, σ²/κn) with σ² ~ InvGamma(νn/2, νn·τn²/2): marginal mean mn and variance νn·τn²/((νn−2)·κn)', () => {
    const p = newPosterior(cfg);
    [1, 0, 1].forEach((x) => observe(p, x)); // m = 0.5, κ = 4, ν = 4, τ² = 0.275 (above)
    const rng = new Rng(11);
    const n = 40000;
    let s = 0;
    let ss = 0;
    for (let i = 0; i < n; i++) {
      const x = drawPosterior(p, cfg, rng);
      s += x;
      ss += x * x;
    }
    const mean = s / n;
    const variance = ss / n - mean * mean;
    const expectedVar = (4 * 0.275) / ((4 - 2) * 4); // 0.1375
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.015);
    expect(variance).toBeGreaterThan(expectedVar * 0.85);
    expect(variance).toBeLessThan(expectedVar * 1.15);
  });

  it('draws are reproducible from the seed', () => {
    const p = newPosterior(cfg);
    observe(p, 0.3);
    const a = new Rng(5);
    const b = new Rng(5);
    const xs = Array.from({ length: 20 }, () => drawPosterior(p, cfg, a));
    const ys = Array.from({ length: 20 }, () => drawPosterior(p, cfg, b));
    expect(xs).toEqual(ys);
    expect(new Set(xs).size).toBe(20);
  });

  it('rejects invalid priors', () => {
    expect(() => newPosterior({ ...cfg, gaussianPrior: { m: 0, kappa: 0, nu: 1, tau2: 0.1 } })).toThrow(/κ/);
    expect(() => newPosterior({ ...defaultPosteriorConfig('beta'), betaPrior: { a: 0, b: 1 } })).toThrow(/Beta prior/);
  });
});
