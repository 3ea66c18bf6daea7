/**
 * The metric chart's scales (renderer/src/lib/chartScales.ts, through MetricChart.svelte) in headless Chromium, read
 * from the figure's data-x-min/-max, data-y-min/-max and data-x-ticks (the scales uPlot drew):
 * - a series of one point on the time axis spans minutes, not years (uPlot pads a lone timestamp by its magnitude);
 * - a step axis is labelled with whole steps only, even for two steps;
 * - a flat series gets ±10 % around its value (0 to 1 at 0, with 2 % of room below for the line; no negative axis
 *   for values never below 0);
 * - the legend shows the value and a bucket's min–max only where they differ (no empty min/max entries).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium, openHarness, type Harness } from './harness';

let h: Harness;
const series = (x: number[], y: number[]) => ({ x, min: y, max: y, last: y });
const chart = () => h.page.getByTestId('chart-m');
const num = async (name: string) => Number(await chart().getAttribute(name));

async function mount(props: Record<string, unknown>): Promise<void> {
  await h.mount('MetricChart', { name: 'm', version: 1, smoothing: 0, xMode: 'step', ...props });
  await expect.poll(() => chart().getAttribute('data-y-max')).not.toBe('NaN');
}

describe.skipIf(!haveChromium)('chart scales', () => {
  beforeAll(async () => {
    h = await openHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('a one-point series on the time axis spans minutes, not years', async () => {
    const t = 1_800_000_000;
    await mount({ series: series([t], [0.3]), xMode: 'time' });
    const span = (await num('data-x-max')) - (await num('data-x-min'));
    expect(span).toBeGreaterThan(0);
    expect(span).toBeLessThan(3600);
    expect(await num('data-x-min')).toBeLessThanOrEqual(t);
    expect(await num('data-x-max')).toBeGreaterThanOrEqual(t);
    await h.shot('chart-one-point-time');
  });

  it('labels a step axis with whole steps only', async () => {
    await mount({ series: series([1, 2], [0.1, 0.2]) });
    await expect.poll(() => chart().getAttribute('data-x-ticks')).not.toBe('');
    const ticks = (await chart().getAttribute('data-x-ticks'))!.split(' ').map(Number);
    expect(ticks.length).toBeGreaterThan(0);
    expect(ticks.every((t) => Number.isInteger(t))).toBe(true);
    // one point on the step axis: a few steps around it, no fractions
    await mount({ series: series([20], [0.3]) });
    expect((await num('data-x-max')) - (await num('data-x-min'))).toBeLessThanOrEqual(10);
    await expect
      .poll(async () =>
        (await chart().getAttribute('data-x-ticks'))!.split(' ').every((t) => Number.isInteger(Number(t))),
      )
      .toBe(true);
  });

  it('gives a flat series ±10 % around its value, ±1 only around 0, and [0, 1] for a share stuck at 0', async () => {
    await mount({ series: series([1, 2, 3], [0.5, 0.5, 0.5]) });
    expect(await num('data-y-min')).toBeCloseTo(0.45, 6);
    expect(await num('data-y-max')).toBeCloseTo(0.55, 6);
    await mount({ series: series([1, 2, 3], [250, 250, 250]) });
    expect(await num('data-y-min')).toBeCloseTo(225, 6);
    expect(await num('data-y-max')).toBeCloseTo(275, 6);
    // at 0 (nothing solved yet, a count of none): 0 to 1 with room for the line, no negative axis
    await mount({ series: series([1, 2, 3], [0, 0, 0]) });
    expect([await num('data-y-min'), await num('data-y-max')]).toEqual([-0.02, 1]);
    await mount({ series: series([1, 2, 3], [0, 0, 0]), bounded: true });
    expect([await num('data-y-min'), await num('data-y-max')]).toEqual([-0.02, 1]);
    // a flat negative value keeps its band on both sides
    await mount({ series: series([1, 2, 3], [-2, -2, -2]) });
    expect(await num('data-y-min')).toBeCloseTo(-2.2, 6);
    expect(await num('data-y-max')).toBeCloseTo(-1.8, 6);
    // a rising share is padded, but not past [-0.02, 1.02]
    await mount({ series: series([1, 2, 3], [0, 0.5, 1]), bounded: true });
    expect(await num('data-y-min')).toBeGreaterThanOrEqual(-0.02);
    expect(await num('data-y-max')).toBeLessThanOrEqual(1.02);
    expect(h.errors).toEqual([]);
  });

  it('shows the value in the legend, and a min–max only for a bucket that holds different values', async () => {
    await mount({ series: series([1, 2, 3], [0.1, 0.2, 0.3]), description: 'what m means', unitText: 'share, 0–1' });
    const legend = h.page.getByTestId('chart-legend');
    expect(await legend.textContent()).toMatch(/step 3: 0\.3/);
    expect(await legend.textContent()).not.toMatch(/–.*–|min|max|bucket/);
    expect(await chart().textContent()).toContain('what m means');
    await mount({ series: { x: [10, 20], min: [0.1, 0.05], max: [0.1, 0.4], last: [0.1, 0.3] } });
    expect(await legend.textContent()).toMatch(/step 20: 0\.3.*bucket 0\.05.*0\.4/s);
    await h.shot('chart-legend');
  });
});
