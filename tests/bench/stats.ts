/** Small helpers shared by the benchmark scripts: medians over repeats, and number formatting for the tables. */

export interface Stat {
  median: number;
  min: number;
  max: number;
  n: number;
}

export function stat(xs: readonly number[]): Stat {
  const s = xs.slice().sort((a, b) => a - b);
  const mid = s.length >> 1;
  return { median: s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2, min: s[0]!, max: s.at(-1)!, n: s.length };
}

/** The q-quantile (nearest rank) of xs. */
export function quantile(xs: readonly number[], q: number): number {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

/** Runs fn `warmup` times untimed, then `repeats` times timed (milliseconds). */
export async function timeRepeats(fn: () => Promise<unknown>, repeats: number, warmup: number): Promise<Stat> {
  for (let i = 0; i < warmup; i++) await fn();
  const ms: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  return stat(ms);
}

/** As timeRepeats, and the process's CPU time per call (user + system, all threads) beside the wall time. */
export async function timeRepeatsCpu(
  fn: () => Promise<unknown>,
  repeats: number,
  warmup: number,
): Promise<{ wall: Stat; cpu: Stat }> {
  for (let i = 0; i < warmup; i++) await fn();
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await fn();
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  return { wall: stat(wall), cpu: stat(cpu) };
}

/** 1,234 with d decimals. */
export const num = (x: number, d = 0): string =>
  x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

/** "306 (295–319, n 5)" */
export const msStat = (s: Stat): string => `${num(s.median)} (${num(s.min)}–${num(s.max)}, n ${s.n})`;

/** A Markdown table (also readable on a terminal). */
export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  return [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}
