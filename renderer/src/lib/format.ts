/** How numbers, times and durations read in the views. */
export function num(x: number | null | undefined, digits = 3): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '–';
  if (x !== 0 && (Math.abs(x) >= 1e5 || Math.abs(x) < 1e-3)) return x.toExponential(2);
  return Number.isInteger(x) ? String(x) : x.toFixed(digits);
}

export function dateTime(iso: string | undefined): string {
  if (!iso) return '–';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function seconds(s: number | null): string {
  if (s === null) return 'not measured';
  if (s < 120) return `≈${Math.round(s)} s`;
  if (s < 7200) return `≈${Math.round(s / 60)} min`;
  return `≈${(s / 3600).toFixed(1)} h`;
}

export function clockTime(epochSeconds: unknown): string {
  return typeof epochSeconds === 'number' ? new Date(epochSeconds * 1000).toLocaleTimeString() : '–';
}

/** Bytes in decimal units: 730 MB, 21.7 GB. */
export function bytes(n: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) {
    n /= 1000;
    i++;
  }
  return `${n >= 100 || i === 0 ? n.toFixed(0) : n.toFixed(1)} ${units[i]}`;
}
