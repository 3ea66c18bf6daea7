/**
 * Chooses OpenBLAS's core type before the library initialises (issue 28). OpenBLAS built with DYNAMIC_ARCH picks its
 * kernels from the CPU's identity when it loads; a release older than the CPU does not know it and falls back to a
 * generic SSE-era core (Debian 12's 0.3.21 gives "Prescott" on a Sapphire-Rapids Xeon: ×3.7 slower products than
 * its SkylakeX kernels on the same CPU). It reads OPENBLAS_CORETYPE once, at load, so the choice must be made before
 * the addon is required.
 *
 * The rule: a user's own OPENBLAS_CORETYPE always wins. Otherwise, when the core OpenBLAS detects is of a lower
 * instruction level than the CPU's flags offer (SSE-era below AVX2+FMA below AVX-512), mars-lab sets the best core
 * type for the flags (SkylakeX for AVX-512 F/BW/DQ/VL, Haswell for AVX2+FMA) for the load only. A detected core at
 * the CPU's own level, or one this table does not know (a newer OpenBLAS's own name), is left alone. What OpenBLAS
 * detects is learnt once per CPU and addon, in a child process that loads the addon without the variable, and kept
 * in native/build/core-probe.json (when the folder is writable; otherwise the probe runs each time, ~0.1 s).
 *
 * Known gap: the probe runs process.execPath with ELECTRON_RUN_AS_NODE, which the packaged app's RunAsNode fuse
 * (main/fuses.ts) refuses; there the probe learns nothing and OpenBLAS's own detection stands (a safe default, but
 * the fallback core stays on a CPU it does not know). Learning the core in-process on first load and using it from
 * the second run on would close it.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

/** Instruction level of each OpenBLAS x86-64 core name (0.3.x), lower-cased: 1 SSE-era, 2 AVX, 3 AVX2+FMA, 4 AVX-512. */
const CORE_LEVEL: Record<string, number> = {
  katmai: 1,
  coppermine: 1,
  northwood: 1,
  prescott: 1,
  banias: 1,
  atom: 1,
  core2: 1,
  penryn: 1,
  dunnington: 1,
  nehalem: 1,
  opteron: 1,
  opteron_sse3: 1,
  barcelona: 1,
  bobcat: 1,
  nano: 1,
  sandybridge: 2,
  bulldozer: 2,
  piledriver: 2,
  haswell: 3,
  steamroller: 3,
  excavator: 3,
  zen: 3,
  skylakex: 4,
  cooperlake: 4,
  sapphirerapids: 4,
};

export interface CpuFeatures {
  model: string;
  flags: Set<string>;
}

/** The first processor's model name and flags from /proc/cpuinfo text; null when there are no flags (not x86). */
export function parseCpuinfo(text: string): CpuFeatures | null {
  const field = (name: string) => new RegExp(`^${name}\\s*:\\s*(.*)$`, 'm').exec(text)?.[1]?.trim();
  const flags = field('flags');
  if (!flags) return null;
  return { model: field('model name') ?? 'unknown', flags: new Set(flags.split(/\s+/)) };
}

/** The best OpenBLAS core type for these flags and its level, or null below AVX2+FMA (nothing to gain over detection). */
export function bestCoreFor(flags: Set<string>): { core: string; level: number; why: string } | null {
  if (['avx512f', 'avx512bw', 'avx512dq', 'avx512vl'].every((f) => flags.has(f))) {
    return { core: 'SkylakeX', level: 4, why: 'AVX-512' };
  }
  if (flags.has('avx2') && flags.has('fma')) return { core: 'Haswell', level: 3, why: 'AVX2 and FMA' };
  return null;
}

export interface CoreChoice {
  /** The OPENBLAS_CORETYPE to set for the load, or null to leave OpenBLAS's own choice (or the user's). */
  set: string | null;
  /** Where the core comes from: the user's environment, OpenBLAS's detection, or mars-lab's choice over it. */
  from: 'environment' | 'detected' | 'chosen';
  /** What OpenBLAS detects without the variable, when it was learnt. */
  detected?: string;
  /** One clause for doctor and run.json. */
  why: string;
}

/** Whether a detected core is below what the flags offer: the rule of this module, pure for the tests. */
export function decideCore(detected: string | undefined, cpu: CpuFeatures | null): CoreChoice {
  const best = cpu ? bestCoreFor(cpu.flags) : null;
  const level = detected ? CORE_LEVEL[detected.toLowerCase()] : undefined;
  if (!best || !detected || level === undefined || level >= best.level) {
    return { set: null, from: 'detected', detected, why: 'as OpenBLAS detected it' };
  }
  return {
    set: best.core,
    from: 'chosen',
    detected,
    why:
      `chosen by mars-lab: OpenBLAS detected ${detected}, a core below this CPU's ${best.why}` +
      ' (set OPENBLAS_CORETYPE to choose another)',
  };
}

const probeCacheSchema = z.object({ key: z.string(), detected: z.string() });

/** This machine's CPU from /proc/cpuinfo, or null off Linux or off x86. */
export function readCpu(): CpuFeatures | null {
  try {
    return parseCpuinfo(fs.readFileSync('/proc/cpuinfo', 'utf8'));
  } catch {
    return null;
  }
}

/** The key of core-probe.json: this CPU and this addon file (a rebuild may link another OpenBLAS). */
export function probeKey(file: string, cpu: CpuFeatures): string {
  const stat = fs.statSync(file);
  return createHash('sha256')
    .update(`${cpu.model}\n${[...cpu.flags].sort().join(' ')}\n${stat.size}\n${stat.mtimeMs}`)
    .digest('hex');
}

export const PROBE_CACHE = 'core-probe.json';

/** What OpenBLAS detects in this addon on this CPU: from the cache, else from a child process that loads it. */
function detectedCore(file: string, cpu: CpuFeatures): string | undefined {
  let key: string;
  try {
    key = probeKey(file, cpu);
  } catch {
    return undefined;
  }
  const cacheFile = path.join(path.dirname(file), PROBE_CACHE);
  try {
    const cached = probeCacheSchema.parse(JSON.parse(fs.readFileSync(cacheFile, 'utf8')));
    if (cached.key === key) return cached.detected;
  } catch {
    // no cache, or another CPU's: probe
  }
  const env: NodeJS.ProcessEnv = { ...process.env, ELECTRON_RUN_AS_NODE: '1', OPENBLAS_NUM_THREADS: '1' };
  delete env.OPENBLAS_CORETYPE;
  const probe = spawnSync(
    process.execPath,
    ['-e', 'process.stdout.write(String(require(process.argv[1]).info().openblasCore ?? ""))', file],
    { env, encoding: 'utf8', timeout: 20_000 },
  );
  const detected = probe.status === 0 ? probe.stdout.trim() : '';
  if (!detected) return undefined;
  try {
    fs.writeFileSync(cacheFile, JSON.stringify({ key, detected }) + '\n');
  } catch {
    // a read-only install: probe again next time
  }
  return detected;
}

/**
 * The core choice for loading `file` (an addon built with OpenBLAS) in this process. Reads /proc/cpuinfo; off Linux
 * or off x86 it leaves OpenBLAS's detection alone.
 */
export function chooseOpenblasCore(file: string, env: NodeJS.ProcessEnv = process.env): CoreChoice {
  const own = env.OPENBLAS_CORETYPE;
  if (own !== undefined) {
    return { set: null, from: 'environment', why: `set by OPENBLAS_CORETYPE=${own} in the environment` };
  }
  const cpu = readCpu();
  if (!cpu || !bestCoreFor(cpu.flags)) return { set: null, from: 'detected', why: 'as OpenBLAS detected it' };
  return decideCore(detectedCore(file, cpu), cpu);
}
