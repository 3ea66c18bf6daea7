/**
 * The metric chart (renderer/src/components/MetricChart.svelte) in headless Chromium: a series with a single point (an
 * eval.* metric after the first evaluation) is drawn, as a marker, where a line alone would draw nothing; a dense
 * series is drawn as a line without markers. Checked on the canvas's pixels in the line's colour.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium, openHarness, type Harness } from './harness';

let h: Harness;

/** Pixels of the chart's canvas in the line's colour (#1f5fbf), and the widest horizontal run of them. */
async function linePixels(): Promise<{ count: number; widest: number }> {
  return h.page
    .locator('[data-testid="chart-eval.pass1"] canvas')
    .evaluate(
      (canvas: {
        width: number;
        height: number;
        getContext(
          k: '2d',
        ): { getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> } } | null;
      }) => {
        const { width, height } = canvas;
        const data = canvas.getContext('2d')!.getImageData(0, 0, width, height).data;
        let count = 0;
        let widest = 0;
        for (let y = 0; y < height; y++) {
          let run = 0;
          for (let x = 0; x < width; x++) {
            const i = 4 * (y * width + x);
            const hit =
              Math.abs(data[i]! - 31) < 24 &&
              Math.abs(data[i + 1]! - 95) < 24 &&
              Math.abs(data[i + 2]! - 191) < 24 &&
              data[i + 3]! > 200;
            if (hit) {
              count++;
              widest = Math.max(widest, ++run);
            } else run = 0;
          }
        }
        return { count, widest };
      },
    );
}

const series = (x: number[], y: number[]) => ({ x, min: y, max: y, last: y });

describe.skipIf(!haveChromium)('metric chart', () => {
  beforeAll(async () => {
    h = await openHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('draws a series of one point (an evaluation metric after one evaluation) as a visible marker', async () => {
    await h.mount('MetricChart', {
      name: 'eval.pass1',
      series: series([20], [0.25]),
      version: 1,
      smoothing: 0,
      xMode: 'step',
    });
    await expect.poll(() => h.page.getByTestId('chart-eval.pass1').getAttribute('data-points')).toBe('1');
    await expect.poll(async () => (await linePixels()).count).toBeGreaterThan(20);
    await h.shot('chart-single-point');
    // three evaluations: still sparse, each a marker on the line
    await h.mount('MetricChart', {
      name: 'eval.pass1',
      series: series([20, 40, 60], [0.25, 0.5, 0.375]),
      version: 1,
      smoothing: 0,
      xMode: 'step',
    });
    await expect.poll(() => h.page.getByTestId('chart-eval.pass1').getAttribute('data-points')).toBe('3');
    await expect.poll(async () => (await linePixels()).count).toBeGreaterThan(60);
    expect(h.errors).toEqual([]);
  });

  it('draws a dense series as a line only (no markers wider than the line)', async () => {
    const x = Array.from({ length: 2000 }, (_, i) => i + 1);
    await h.mount('MetricChart', {
      name: 'eval.pass1',
      series: series(
        x,
        x.map(() => 0.5),
      ),
      version: 1,
      smoothing: 0,
      xMode: 'step',
    });
    await expect.poll(() => h.page.getByTestId('chart-eval.pass1').getAttribute('data-points')).toBe('2000');
    // a flat line: one long horizontal run of the line's colour, and little else (a marker would add 7-pixel blobs)
    await expect.poll(async () => (await linePixels()).widest).toBeGreaterThan(200);
    const { count, widest } = await linePixels();
    expect(count).toBeLessThan(widest * 4);
    expect(h.errors).toEqual([]);
  });
});
