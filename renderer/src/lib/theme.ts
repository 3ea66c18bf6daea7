/**
 * The palette (CSS variables in App.svelte, light or dark with the system's prefers-color-scheme) as the uPlot charts
 * need it: uPlot draws on a canvas, which cannot read `var(--x)`, so a chart reads the colours from its own element
 * (getComputedStyle, which also honours a `.light-island` around it) when it is made and again when the system's
 * scheme changes (`onSchemeChange`), then redraws. A line's colour may be given as `var(--name)`: `resolveColour`
 * turns it into the value in force.
 */
import type uPlot from 'uplot';

export interface ChartColours {
  /** Axis labels and ticks' text (--chart-axis). */
  axis: string;
  /** Grid lines and ticks (--chart-grid). */
  grid: string;
}

/** The value of `var(--name)` (or `var(--name, fallback)`) at `el`, or the colour itself when it is not a variable. */
export function resolveColour(el: Element, colour: string): string {
  const m = /^var\(\s*(--[\w-]+)\s*(?:,\s*(.+))?\)$/.exec(colour.trim());
  if (!m) return colour;
  const value = getComputedStyle(el).getPropertyValue(m[1]!).trim();
  return value || (m[2] ? resolveColour(el, m[2]) : colour);
}

export function chartColours(el: Element): ChartColours {
  const style = getComputedStyle(el);
  const read = (name: string, fallback: string): string => style.getPropertyValue(name).trim() || fallback;
  return { axis: read('--chart-axis', '#000'), grid: read('--chart-grid', 'rgba(0,0,0,0.07)') };
}

/** A colour with an alpha: `#rrggbb` or `#rgb` as rgba(…); anything else as it is. */
export function fade(colour: string, alpha: number): string {
  let hex = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(colour)?.[1];
  if (!hex) return colour;
  if (hex.length === 3) hex = [...hex].map((c) => c + c).join('');
  return `rgba(${parseInt(hex.slice(0, 2), 16)},${parseInt(hex.slice(2, 4), 16)},${parseInt(hex.slice(4, 6), 16)},${alpha})`;
}

/**
 * An axis styled by the palette: its text, tick and grid colours are read through `colours()` at every draw, so a
 * redraw after a scheme change recolours it without making the chart again.
 */
export function themedAxis(axis: uPlot.Axis, colours: () => ChartColours): uPlot.Axis {
  return {
    ...axis,
    stroke: () => colours().axis,
    grid: { ...axis.grid, stroke: () => colours().grid },
    ticks: { ...axis.ticks, stroke: () => colours().grid },
  };
}

/** Calls `onChange` when the system switches between light and dark; returns the unsubscribe. */
export function onSchemeChange(onChange: () => void): () => void {
  if (typeof window === 'undefined' || !window.matchMedia) return () => {};
  const query = window.matchMedia('(prefers-color-scheme: dark)');
  query.addEventListener('change', onChange);
  return () => query.removeEventListener('change', onChange);
}
