// The stand-in for @tensorflow/tfjs-node-gpu (see register.mjs), by MARS_LAB_FAKE_TFJS_NODE_GPU:
// - `missing-cudnn`: loading fails as the native binding does when the dynamic linker cannot find a CUDA library;
// - `cpu-only`: it loads and registers a `tensorflow` backend that, like libtensorflow without CUDA, found no GPU
//   (tfjs-node's backend exposes that as `isUsingGpuDevice`).
import * as tf from '@tensorflow/tfjs';

const mode = process.env.MARS_LAB_FAKE_TFJS_NODE_GPU;
if (mode === 'missing-cudnn') {
  throw new Error(
    'libcudnn.so.8: cannot open shared object file: No such file or directory\n' +
      '    at Module._extensions..node (node:internal/modules/cjs/loader:1460:18)',
  );
} else if (mode === 'cpu-only') {
  class CpuOnlyTensorflow extends tf.KernelBackend {
    isUsingGpuDevice = false;
  }
  tf.registerBackend('tensorflow', () => new CpuOnlyTensorflow(), 3);
} else {
  throw new Error(`MARS_LAB_FAKE_TFJS_NODE_GPU must be missing-cudnn or cpu-only, not '${mode}'`);
}
