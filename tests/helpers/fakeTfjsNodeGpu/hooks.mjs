// Module resolution hook (see register.mjs): only the GPU build's specifier is redirected, and, with
// MARS_LAB_FAKE_WEBGPU set, `webgpu` (except where the stand-in itself imports the real package).
const webgpuStandIn = new URL('./webgpu.mjs', import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (specifier === '@tensorflow/tfjs-node-gpu' && process.env.MARS_LAB_FAKE_TFJS_NODE_GPU) {
    return { url: new URL('./module.mjs', import.meta.url).href, shortCircuit: true };
  }
  if (specifier === 'webgpu' && process.env.MARS_LAB_FAKE_WEBGPU && context.parentURL !== webgpuStandIn) {
    return { url: webgpuStandIn, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
