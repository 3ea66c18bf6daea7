/**
 * Charts follow the palette (renderer/src/lib/theme.ts, lib/palette.css) when the system switches between light and
 * dark while they are shown, without being made again: uPlot draws on a canvas, which cannot read CSS variables, so
 * each chart reads the colours from its element and redraws on a prefers-color-scheme change. Checked on the canvas's
 * pixels: axis labels light grey in dark and none in light; MetricChart's line in --chart-line (#1f5fbf in light,
 * #7aa7ff in dark); an OverlayChart line given as a variable (`var(--chart-ink, #111)`) drawn in its value.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium, openHarness, type Harness } from './harness';

let h: Harness;

/** Opaque pixels of the chart's canvas: light grey ones (axis text in dark) and ones near `rgb`. */
async function pixels(testid: string, rgb: [number, number, number]): Promise<{ lightGrey: number; near: number }> {
  return h.page.locator(`[data-testid="${testid}"] canvas`).evaluate(
    (
      canvas: {
        width: number;
        height: number;
        getContext(
          k: '2d',
        ): { getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> } } | null;
      },
      target: [number, number, number],
    ) => {
      const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
      let lightGrey = 0;
      let near = 0;
      for (let i = 0; i < data.length; i += 4) {
        const [r, g, b, a] = [data[i]!, data[i + 1]!, data[i + 2]!, data[i + 3]!];
        if (a <= 200) continue;
        if (r > 140 && Math.abs(r - g) < 20 && Math.abs(g - b) < 25) lightGrey++;
        if (Math.abs(r - target[0]) < 24 && Math.abs(g - target[1]) < 24 && Math.abs(b - target[2]) < 24) near++;
      }
      return { lightGrey, near };
    },
    rgb,
  );
}

const LIGHT_LINE: [number, number, number] = [31, 95, 191];
const DARK_LINE: [number, number, number] = [122, 167, 255];
const DARK_INK: [number, number, number] = [226, 230, 236];

describe.skipIf(!haveChromium)('charts follow a switch between light and dark', () => {
  beforeAll(async () => {
    h = await openHarness();
  });
  afterAll(async () => {
    await h?.page.emulateMedia({ colorScheme: 'light' });
    await h?.close();
  });

  it('MetricChart redraws its axes and line in the palette of the new scheme, without being made again', async () => {
    await h.page.emulateMedia({ colorScheme: 'light' });
    const x = Array.from({ length: 40 }, (_, i) => i + 1);
    const y = x.map((i) => Math.sin(i / 5));
    await h.mount('MetricChart', {
      name: 'reward',
      series: { x, min: y, max: y, last: y },
      version: 1,
      smoothing: 0,
      xMode: 'step',
    });
    await expect.poll(async () => (await pixels('chart-reward', LIGHT_LINE)).near).toBeGreaterThan(100);
    expect((await pixels('chart-reward', LIGHT_LINE)).lightGrey).toBeLessThan(20);
    // mark the canvas: a chart made again would have a new one
    await h.page
      .locator('[data-testid="chart-reward"] canvas')
      .evaluate((c: { dataset: Record<string, string> }) => (c.dataset['mark'] = 'first'));
    await h.page.emulateMedia({ colorScheme: 'dark' });
    await expect.poll(async () => (await pixels('chart-reward', DARK_LINE)).near).toBeGreaterThan(100);
    expect((await pixels('chart-reward', DARK_LINE)).lightGrey).toBeGreaterThan(50);
    expect((await pixels('chart-reward', LIGHT_LINE)).near).toBeLessThan(20);
    expect(await h.page.locator('[data-testid="chart-reward"] canvas[data-mark="first"]').count()).toBe(1);
    // and back
    await h.page.emulateMedia({ colorScheme: 'light' });
    await expect.poll(async () => (await pixels('chart-reward', LIGHT_LINE)).near).toBeGreaterThan(100);
    expect((await pixels('chart-reward', LIGHT_LINE)).lightGrey).toBeLessThan(20);
    expect(h.errors).toEqual([]);
  });

  it('OverlayChart draws a line given as a palette variable in its value, and follows the switch', async () => {
    await h.page.emulateMedia({ colorScheme: 'light' });
    const x = Array.from({ length: 30 }, (_, i) => i + 1);
    const lines = [{ label: 'reference', colour: 'var(--chart-ink, #111)', x, y: x.map((i) => i / 30) }];
    await h.mount('OverlayChart', { title: 'ink', lines, testid: 'overlay-ink' });
    await expect.poll(async () => (await pixels('overlay-ink', [17, 17, 17])).near).toBeGreaterThan(100);
    await h.page.emulateMedia({ colorScheme: 'dark' });
    await expect.poll(async () => (await pixels('overlay-ink', DARK_INK)).near).toBeGreaterThan(100);
    expect((await pixels('overlay-ink', [17, 17, 17])).near).toBeLessThan(20);
    expect(h.errors).toEqual([]);
  });
});
