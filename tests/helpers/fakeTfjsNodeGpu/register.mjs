// `node --import ./register.mjs`: makes `@tensorflow/tfjs-node-gpu` resolve to a stand-in (./module.mjs) that fails or
// loads the way the real GPU build does on a machine without CUDA 11.2 / cuDNN 8.1, so that `doctor`'s explanation of
// that requirement can be tested where neither libtensorflow nor a GPU exists. MARS_LAB_FAKE_TFJS_NODE_GPU picks how.
// With MARS_LAB_FAKE_WEBGPU=hardware, `webgpu` resolves to a stand-in (./webgpu.mjs) whose software adapter passes
// for a GPU, so that the ladder's order between webgpu and tensorflow can be tested here too.
import { register } from 'node:module';

register(new URL('./hooks.mjs', import.meta.url));
