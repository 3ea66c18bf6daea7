/**
 * OpenBLAS's core choice (issue 28, engine/tensor/native/coreType.ts), as a rule on /proc/cpuinfo text: a generic fallback
 * core on a CPU with AVX-512 or AVX2+FMA is replaced by the best core for the flags; a core at the CPU's own level,
 * a name the table does not know, an SSE-only CPU and a user's own OPENBLAS_CORETYPE are left alone.
 */
import { describe, expect, it } from 'vitest';
import { bestCoreFor, chooseOpenblasCore, decideCore, parseCpuinfo } from '../../../engine/tensor/native/coreType';

const cpuinfo = (model: string, flags: string) =>
  `processor\t: 0\nvendor_id\t: x\nmodel name\t: ${model}\nflags\t\t: ${flags}\n\nprocessor\t: 1\nflags\t\t: fpu\n`;
// Abridged from lscpu on the machines of the issue: a Sapphire-Rapids-class Xeon, an AMD EPYC (Zen 4), a Haswell.
const SPR = cpuinfo(
  'Intel(R) Xeon(R) Processor',
  'fpu sse sse2 ssse3 sse4_1 sse4_2 avx fma avx2 avx512f avx512dq avx512bw avx512vl avx512_vnni avx512_bf16 avx512_fp16',
);
const ZEN4 = cpuinfo('AMD EPYC', 'fpu sse sse2 avx fma avx2 avx512f avx512dq avx512bw avx512vl avx512_bf16');
const HASWELL = cpuinfo('Intel(R) Xeon(R) CPU E5-2690 v3', 'fpu sse sse2 sse4_2 avx fma avx2');
const OLD = cpuinfo('Intel(R) Core(TM)2 Duo', 'fpu sse sse2 ssse3');

describe('OpenBLAS core choice', () => {
  it('reads the first processor of /proc/cpuinfo', () => {
    const cpu = parseCpuinfo(SPR)!;
    expect(cpu.model).toBe('Intel(R) Xeon(R) Processor');
    expect(cpu.flags.has('avx512_fp16')).toBe(true);
    expect(parseCpuinfo('Processor\t: ARMv8\nFeatures\t: neon\n')).toBeNull();
  });

  it('replaces a generic fallback by the best core for the flags', () => {
    expect(decideCore('Prescott', parseCpuinfo(SPR))).toMatchObject({ set: 'SkylakeX', from: 'chosen' });
    expect(decideCore('Prescott', parseCpuinfo(SPR)).why).toMatch(/OpenBLAS detected Prescott.*AVX-512/);
    expect(decideCore('Core2', parseCpuinfo(HASWELL))).toMatchObject({ set: 'Haswell', from: 'chosen' });
    // An AVX-only core on an AVX2 CPU is below it too.
    expect(decideCore('Sandybridge', parseCpuinfo(HASWELL))).toMatchObject({ set: 'Haswell' });
    // Zen (AVX2 kernels) on an AVX-512 Zen 4, as an OpenBLAS older than Zen 4 detects it.
    expect(decideCore('Zen', parseCpuinfo(ZEN4))).toMatchObject({ set: 'SkylakeX' });
  });

  it('leaves a core at the CPU own level, an unknown name and an SSE-only CPU alone', () => {
    expect(decideCore('Cooperlake', parseCpuinfo(ZEN4))).toMatchObject({ set: null, from: 'detected' });
    expect(decideCore('SkylakeX', parseCpuinfo(SPR))).toMatchObject({ set: null });
    expect(decideCore('Haswell', parseCpuinfo(HASWELL))).toMatchObject({ set: null });
    expect(decideCore('Zen', parseCpuinfo(HASWELL))).toMatchObject({ set: null });
    expect(decideCore('SomeFutureLake', parseCpuinfo(SPR))).toMatchObject({ set: null });
    expect(decideCore('Prescott', parseCpuinfo(OLD))).toMatchObject({ set: null });
    expect(decideCore(undefined, parseCpuinfo(SPR))).toMatchObject({ set: null });
    expect(bestCoreFor(parseCpuinfo(OLD)!.flags)).toBeNull();
  });

  it("never overrides the user's own OPENBLAS_CORETYPE, even an empty one", () => {
    for (const own of ['Prescott', '']) {
      const c = chooseOpenblasCore('/nonexistent/mars_native.node', { OPENBLAS_CORETYPE: own });
      expect(c).toEqual({ set: null, from: 'environment', why: `set by OPENBLAS_CORETYPE=${own} in the environment` });
    }
  });
});
