import { BACKENDS, initBackend, tf, type BackendName } from '../../engine/tensor/backend';

/** The backends every gradient test runs on (DESIGN.md "Backends": wasm lacks some gradient kernels that cpu has). */
export const GRADIENT_BACKENDS = ['cpu', 'wasm'] as const;

/** Switch this test process to a backend (initBackend re-initialises when a different one is forced). */
export async function useBackend(name: BackendName): Promise<void> {
  await initBackend({ force: name });
  if (tf.getBackend() !== name) throw new Error(`could not switch to the ${name} backend`);
}

/** Backends that initialise on this machine (cpu and wasm always; webgpu/tensorflow where present). */
export async function availableBackends(): Promise<BackendName[]> {
  const ok: BackendName[] = [];
  for (const b of BACKENDS) {
    try {
      await initBackend({ force: b });
      ok.push(b);
    } catch {
      // not here: the suite prints which ran
    }
  }
  return ok;
}

/** Exactly 0 (−0 included, which Object.is-based matchers would reject). */
export const isExactlyZero = (x: number): boolean => x === 0;
