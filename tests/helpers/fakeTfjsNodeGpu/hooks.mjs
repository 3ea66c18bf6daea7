// Module resolution hook (see register.mjs): only the GPU build's specifier is redirected.
export async function resolve(specifier, context, nextResolve) {
  if (specifier === '@tensorflow/tfjs-node-gpu') {
    return { url: new URL('./module.mjs', import.meta.url).href, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
