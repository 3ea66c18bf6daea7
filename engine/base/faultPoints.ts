/**
 * Named places where the crash tests stop a real run: with MARS_LAB_FAULT_POINT=<name> (and optionally
 * MARS_LAB_FAULT_HIT=<n>, the n-th time the point is reached, default 1) the process writes MARS_LAB_FAULT_MARKER
 * and then blocks until it is killed. Without those variables a fault point costs one string comparison.
 */
import fs from 'node:fs';

const counts = new Map<string, number>();

export function faultPoint(name: string, beforeBlocking?: () => void): void {
  if (process.env.MARS_LAB_FAULT_POINT !== name) return;
  const hit = (counts.get(name) ?? 0) + 1;
  counts.set(name, hit);
  if (hit !== Number(process.env.MARS_LAB_FAULT_HIT ?? 1)) return;
  beforeBlocking?.();
  if (process.env.MARS_LAB_FAULT_MARKER) fs.writeFileSync(process.env.MARS_LAB_FAULT_MARKER, name);
  // Block the whole process (no timers, no I/O) so the test's SIGKILL lands exactly here.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
}
