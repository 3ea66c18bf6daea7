/**
 * Dawn (the `webgpu` package) asked for an adapter, for the webgpu rung (webgpuRung.ts): its default backend (Vulkan on
 * Linux) for a GPU, or its OpenGL backend over Mesa's llvmpipe for a software adapter. Each probe runs once per process
 * and keeps what Dawn made alive.
 */
import { findSharedLibrary } from './systemLibraries';

const SOFTWARE_ADAPTER = /llvmpipe|lavapipe|swiftshader|softpipe|software/i;

interface GpuLike {
  requestAdapter: (opts?: { powerPreference?: string; featureLevel?: string }) => Promise<GpuAdapterLike | null>;
}

export interface DawnModule {
  create: (opts: string[]) => GpuLike;
  globals: object;
}

export interface DawnProbe {
  gpu: GpuLike;
  name: string;
  software: boolean;
  /** How Dawn reached it: its default backend (Vulkan on Linux), or OpenGL in WebGPU's compatibility mode. */
  via: 'native' | 'opengl';
}

/** Give up on an adapter request that hangs (a driver that never answers) after this long. */
const ADAPTER_TIMEOUT_MS = 10_000;

function withTimeout<T>(p: Promise<T | null>): Promise<T | null> {
  return Promise.race([p, new Promise<null>((resolve) => setTimeout(() => resolve(null), ADAPTER_TIMEOUT_MS).unref())]);
}

function describeAdapter(adapter: GpuAdapterLike): string {
  const info = adapter.info ?? {};
  return [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(' ') || 'unknown adapter';
}

/**
 * One Dawn instance per process and kind: tfjs keeps the device it made from the first one, and a second instance
 * (when a process switches back to webgpu) lets the first be garbage-collected under that device, which crashes Dawn's
 * threads. Each probe is kept (and its instance with it) whatever its outcome.
 */
let nativeProbe: Promise<DawnProbe | null> | null = null;
let openglProbe: Promise<DawnProbe | null> | null = null;
/** Instances that found no adapter are kept too, so that nothing Dawn made is collected while its threads run. */
const keptInstances: GpuLike[] = [];

/** Dawn's default backend for the platform (Vulkan on Linux): the GPU rung proper. */
export function probeDawn(dawn: DawnModule): Promise<DawnProbe | null> {
  nativeProbe ??= (async () => {
    const gpu = dawn.create([]);
    keptInstances.push(gpu);
    // The adapter tfjs-backend-webgpu will ask for (a discrete GPU before an integrated or software one).
    const adapter = await withTimeout(gpu.requestAdapter({ powerPreference: 'high-performance' }));
    if (!adapter) return null;
    const name = describeAdapter(adapter);
    return { gpu, name, via: 'native', software: Boolean(adapter.isFallbackAdapter) || SOFTWARE_ADAPTER.test(name) };
  })();
  return nativeProbe;
}

/**
 * The software adapter for machines without a GPU: Dawn's OpenGL backend over Mesa's llvmpipe, through EGL without a
 * display (EGL_PLATFORM=surfaceless, unless the environment names another platform). Dawn offers its
 * OpenGL backend only at WebGPU's compatibility feature level, so every adapter request of this instance (tfjs's own
 * included) asks for that level. Dawn refuses Mesa's Vulkan rasteriser (lavapipe 22.3 in Debian 12: "Vulkan
 * shaderUniform*ArrayDynamicIndexing required"), hence OpenGL.
 */
export function probeDawnOpenGL(dawn: DawnModule): Promise<DawnProbe | null> {
  openglProbe ??= (async () => {
    // Dawn opens EGL by its unversioned name, which only the development package (libegl-dev) provides.
    if (process.platform === 'linux' && !findSharedLibrary('libEGL.so')) return null;
    const gpu = dawn.create(['backend=opengl']);
    keptInstances.push(gpu);
    const request = gpu.requestAdapter.bind(gpu);
    gpu.requestAdapter = (opts = {}) => request({ ...opts, featureLevel: 'compatibility' });
    // Dawn opens the EGL display again for each device, so the variable stays set for the process once needed.
    process.env.EGL_PLATFORM ??= 'surfaceless';
    const adapter = await withTimeout(gpu.requestAdapter({ powerPreference: 'high-performance' }));
    if (!adapter) return null;
    const name = describeAdapter(adapter);
    return { gpu, name, via: 'opengl', software: Boolean(adapter.isFallbackAdapter) || SOFTWARE_ADAPTER.test(name) };
  })();
  return openglProbe;
}

interface GpuAdapterLike {
  info?: { vendor?: string; architecture?: string; device?: string; description?: string };
  isFallbackAdapter?: boolean;
}
