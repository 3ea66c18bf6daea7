/** Backends in tests: switch to one, probe which load here (and why the others do not), and which a run insists on. */
import { BACKENDS, BackendUnavailableError, initBackend, tf, type BackendName } from '../../engine/tensor/backend';

/** The backends every gradient test runs on (docs/architecture.md "Backends": wasm lacks some gradient kernels that cpu has). */
export const GRADIENT_BACKENDS = ['cpu', 'wasm'] as const;

/** Switch this test process to a backend (initBackend re-initialises when a different one is forced). */
export async function useBackend(name: BackendName): Promise<void> {
  await initBackend({ force: name });
  if (tf.getBackend() !== name) throw new Error(`could not switch to the ${name} backend`);
}

export interface BackendProbe {
  backend: BackendName;
  present: boolean;
  /** Why it is absent, for a skipped test's note: each package tried and the first sentence of what went wrong. */
  reason: string;
}

/**
 * Try every backend of the ladder (forced, so a software webgpu adapter counts: Mesa's llvmpipe through Dawn's OpenGL
 * backend, which CI installs) and say why the absent ones are.
 */
export async function probeBackends(): Promise<BackendProbe[]> {
  const probes: BackendProbe[] = [];
  for (const backend of BACKENDS) {
    try {
      await initBackend({ force: backend });
      probes.push({ backend, present: true, reason: '' });
    } catch (err) {
      const reason =
        err instanceof BackendUnavailableError
          ? err.attempts
              .filter((a) => a.backend === backend)
              .map(
                (a) =>
                  `${a.package}: ${a.status === 'failed' ? 'failed: ' : ''}${a.detail.split(/(?<=[A-Za-z)])\. /)[0]}`,
              )
              .join('; ')
          : String(err);
      probes.push({ backend, present: false, reason });
    }
  }
  return probes;
}

/** Backends that initialise on this machine (cpu and wasm always; webgpu/tensorflow where present). */
export async function availableBackends(): Promise<BackendName[]> {
  return (await probeBackends()).filter((p) => p.present).map((p) => p.backend);
}

/**
 * Backends a run insists on, from MARS_LAB_EXPECT_BACKENDS (comma-separated): where one is absent the numerics
 * tests fail instead of skipping it. bench/gpu.sh sets it to webgpu on a machine with an NVIDIA Vulkan driver.
 */
export function expectedBackends(env: NodeJS.ProcessEnv = process.env): BackendName[] {
  const names = (env.MARS_LAB_EXPECT_BACKENDS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const n of names) {
    if (!BACKENDS.includes(n as BackendName)) {
      throw new Error(`MARS_LAB_EXPECT_BACKENDS: unknown backend '${n}' (known: ${BACKENDS.join(', ')})`);
    }
  }
  return names as BackendName[];
}

/**
 * For a test of one backend: skip it with the reason where the backend is absent, unless MARS_LAB_EXPECT_BACKENDS names
 * it (CI names webgpu, on Mesa's software adapter): then the absence fails the test.
 */
export function requireBackend(
  ctx: { skip: (note?: string) => void },
  probe: BackendProbe,
  expected: BackendName[] = expectedBackends(),
): void {
  if (probe.present) return;
  if (expected.includes(probe.backend)) {
    throw new Error(`${probe.backend} is absent but MARS_LAB_EXPECT_BACKENDS names it: ${probe.reason}`);
  }
  ctx.skip(probe.reason);
}

/** Exactly 0 (−0 included, which Object.is-based matchers would reject). */
export const isExactlyZero = (x: number): boolean => x === 0;
