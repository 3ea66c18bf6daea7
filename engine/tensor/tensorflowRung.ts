/**
 * The tensorflow rung of the backend ladder (backend.ts): libtensorflow through tfjs-node-gpu, then tfjs-node, where a
 * user installed one (neither is a dependency of mars-lab), with why each build was not taken.
 */
import * as tf from '@tensorflow/tfjs';
import type { BackendAttempt } from './backend';
import { isNotInstalled, message } from './moduleLoading';
import { cudaHint } from './systemLibraries';

/**
 * Why tfjs-node(-gpu) is absent: mars-lab does not depend on it (its installer downloads libtensorflow from Google's
 * storage, outside the npm registry, and failed every offline `npm ci`), and how a user who wants it adds it.
 */
export const TENSORFLOW_NOT_INSTALLED = (pkg: string) =>
  `not installed: no dependency of mars-lab (its installer downloads libtensorflow from outside the npm registry). ` +
  `Add it with 'npm install ${pkg}@4.22.0' where that download works` +
  (pkg.endsWith('-gpu')
    ? '; for a current NVIDIA GPU webgpu is the rung (this build needs CUDA 11.2 and cuDNN 8.1 and has no machine code for Hopper or Blackwell)'
    : '');

export async function tryTensorflow(attempts: BackendAttempt[]): Promise<boolean> {
  for (const pkg of ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node']) {
    try {
      await import(pkg);
      if (!(await tf.setBackend('tensorflow'))) throw new Error('setBackend("tensorflow") returned false');
      let detail = `libtensorflow through ${pkg}`;
      if (pkg.endsWith('-gpu')) {
        // tfjs-node's backend says whether libtensorflow registered a GPU device; without CUDA it falls back to the CPU.
        const onGpu = (tf.backend() as { isUsingGpuDevice?: boolean }).isUsingGpuDevice;
        if (onGpu === true) detail += ', on the GPU';
        else if (onGpu === false) detail += `, but libtensorflow found no usable GPU and runs on the CPU${cudaHint()}`;
      }
      attempts.push({ backend: 'tensorflow', package: pkg, status: 'chosen', detail });
      return true;
    } catch (err) {
      if (isNotInstalled(err, pkg)) {
        attempts.push({
          backend: 'tensorflow',
          package: pkg,
          status: 'not-installed',
          detail: TENSORFLOW_NOT_INSTALLED(pkg),
        });
      } else {
        // A shared library that would not load (libtensorflow itself, or a CUDA/cuDNN library it links) is the usual
        // failure of the GPU build: say what it needs and which of those libraries are missing.
        const libraryError =
          /\.so(\.\d+)*\b|shared object|dlopen|cannot open|libtensorflow|cuda|cudnn|tfjs_binding/i.test(message(err));
        const hint = pkg.endsWith('-gpu') && libraryError ? cudaHint() : '';
        attempts.push({ backend: 'tensorflow', package: pkg, status: 'failed', detail: message(err) + hint });
      }
    }
  }
  return false;
}
