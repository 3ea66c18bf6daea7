// The stand-in for `webgpu` (Dawn for Node; see register.mjs), by MARS_LAB_FAKE_WEBGPU:
// - `hardware`: the real Dawn, but its default instance is its OpenGL backend over Mesa's llvmpipe (EGL without a
//   display, WebGPU's compatibility level) and the adapter says it is hardware, so that a machine without a GPU can
//   show which rung the ladder takes when a GPU adapter and a tensorflow build are both there.
import { create as realCreate, globals } from 'webgpu';

export { globals };

const mode = process.env.MARS_LAB_FAKE_WEBGPU;
if (mode !== 'hardware') throw new Error(`MARS_LAB_FAKE_WEBGPU must be hardware, not '${mode}'`);

export function create() {
  process.env.EGL_PLATFORM ??= 'surfaceless';
  const gpu = realCreate(['backend=opengl']);
  const request = gpu.requestAdapter.bind(gpu);
  gpu.requestAdapter = async (opts = {}) => {
    const adapter = await request({ ...opts, featureLevel: 'compatibility' });
    if (!adapter) return null;
    Object.defineProperty(adapter, 'info', { value: { vendor: 'stand-in', device: 'hardware adapter' } });
    Object.defineProperty(adapter, 'isFallbackAdapter', { value: false });
    return adapter;
  };
  return gpu;
}
