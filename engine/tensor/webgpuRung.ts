/**
 * The webgpu rung of the backend ladder (backend.ts): Dawn's adapter (dawnProbe.ts) installed as
 * `globalThis.navigator.gpu`, tfjs-backend-webgpu on it with AddN fixed for many inputs, and why the rung was not taken: package
 * missing, no Vulkan loader, no adapter, or only a software one unless forced.
 */
import * as tf from '@tensorflow/tfjs';
import type { AttemptStatus, BackendAttempt } from './backend';
import { probeDawn, probeDawnOpenGL, type DawnModule } from './dawnProbe';
import { isNotInstalled, message, packageVersion } from './moduleLoading';
import { describeVulkan, vulkanEnvironment } from './systemLibraries';

/**
 * tfjs-backend-webgpu 4.22's AddN binds every input as a storage buffer in one shader, but asks for the device's
 * default limit of 8 storage buffers per stage, so `tf.addN` of more than 7 tensors (a gradient norm over a model's
 * parameters, for one) makes an invalid pipeline and silently yields garbage. Concat splits its inputs to fit that
 * limit; this gives AddN the same treatment: sum chunks that fit, then sum the partial sums.
 */
function chunkWebgpuAddN(): void {
  const kernel = tf.getKernel('AddN', 'webgpu') as (tf.KernelConfig & { chunked?: true }) | undefined;
  if (!kernel || kernel.chunked) return;
  const original = kernel.kernelFunc;
  const kernelFunc: tf.KernelFunc = (args) => {
    const inputs = args.inputs as unknown as tf.TensorInfo[];
    const backend = args.backend as {
      device?: { limits?: { maxStorageBuffersPerShaderStage?: number } };
      disposeData(id: object): void;
    };
    const max = Math.max(2, (backend.device?.limits?.maxStorageBuffersPerShaderStage ?? 8) - 1);
    if (inputs.length <= max) return original(args);
    const partial: tf.TensorInfo[] = [];
    for (let i = 0; i < inputs.length; i += max) {
      const chunk = inputs.slice(i, i + max);
      partial.push(
        chunk.length === 1
          ? chunk[0]!
          : (kernelFunc({ ...args, inputs: chunk as unknown as tf.NamedTensorInfoMap }) as tf.TensorInfo),
      );
    }
    const out = kernelFunc({ ...args, inputs: partial as unknown as tf.NamedTensorInfoMap }) as tf.TensorInfo;
    for (const p of partial) if (!inputs.includes(p)) backend.disposeData(p.dataId);
    return out;
  };
  tf.unregisterKernel('AddN', 'webgpu');
  tf.registerKernel({ ...kernel, kernelFunc, chunked: true } as tf.KernelConfig);
}

/** Whether the webgpu backend this process set up runs on a software adapter (its kernels then run on CPU threads). */
let webgpuOnSoftware = false;

export async function tryWebgpu(attempts: BackendAttempt[], forced: boolean): Promise<boolean> {
  const record = (status: AttemptStatus, detail: string, pkg = 'webgpu') =>
    attempts.push({ backend: 'webgpu', package: pkg, status, detail });
  if (packageVersion('webgpu') === null) {
    record('not-installed', 'the optional `webgpu` package (Dawn for Node) is not installed');
    return false;
  }
  const vulkan = vulkanEnvironment();
  const noLoader = process.platform === 'linux' && !vulkan.loader;
  const hardwareWhy = noLoader
    ? 'libvulkan.so.1 (the Vulkan loader) was not found, so Dawn can reach no GPU. Install the GPU ' +
      "vendor's Vulkan driver (NVIDIA: libvulkan1 and the driver's nvidia_icd.json; in a container, " +
      'NVIDIA_DRIVER_CAPABILITIES must include graphics)'
    : `Dawn found no GPU adapter (${describeVulkan(vulkan)})`;
  const softwareHint =
    "; --backend webgpu also tries a software adapter (Mesa's llvmpipe through Dawn's OpenGL backend), slower than wasm";
  if (noLoader && !forced) {
    // Loading Dawn anyway would only print a warning on every start.
    record('no-adapter', `no hardware adapter: ${hardwareWhy}${softwareHint}`);
    return false;
  }
  let dawn: DawnModule;
  try {
    dawn = (await import('webgpu')) as unknown as DawnModule;
  } catch (err) {
    if (isNotInstalled(err, 'webgpu')) {
      record('not-installed', 'the optional `webgpu` package (Dawn for Node) is not installed');
    } else record('failed', message(err));
    return false;
  }
  try {
    let probe = noLoader ? null : await probeDawn(dawn);
    if (!probe && !forced) {
      record('no-adapter', `no hardware adapter: ${hardwareWhy}${softwareHint}`);
      return false;
    }
    probe ??= await probeDawnOpenGL(dawn);
    if (!probe) {
      record(
        'no-adapter',
        `no adapter: ${hardwareWhy}; and no software adapter through OpenGL either (Mesa's llvmpipe over EGL: Dawn ` +
          "opens libEGL.so, the unversioned name, and Mesa's swrast driver: apt-get install libegl-dev libgl1-mesa-dri)",
      );
      return false;
    }
    const { gpu, name, software, via } = probe;
    if (!forced && software) {
      record(
        'software-adapter',
        `only a software adapter (${name}) was found; it is slower than wasm. Force it with --backend webgpu`,
      );
      return false;
    }
    Object.assign(globalThis, dawn.globals);
    const nav = ((globalThis as { navigator?: object }).navigator ??= {}) as { gpu?: unknown };
    Object.defineProperty(nav, 'gpu', { value: gpu, configurable: true });
    await import('@tensorflow/tfjs-backend-webgpu');
    chunkWebgpuAddN();
    if (!(await tf.setBackend('webgpu'))) throw new Error('setBackend("webgpu") returned false');
    const how =
      via === 'opengl'
        ? ` (${software ? 'software, ' : ''}through Dawn's OpenGL backend at WebGPU's compatibility level, as no ` +
          `hardware adapter was found: ${hardwareWhy.split(/(?<=[A-Za-z)])\. /)[0]})`
        : '';
    webgpuOnSoftware = software;
    record('chosen', `adapter: ${name}${how}`, '@tensorflow/tfjs-backend-webgpu');
    return true;
  } catch (err) {
    if (isNotInstalled(err, '@tensorflow/tfjs-backend-webgpu')) {
      record(
        'not-installed',
        'the optional @tensorflow/tfjs-backend-webgpu package is not installed',
        '@tensorflow/tfjs-backend-webgpu',
      );
    } else record('failed', message(err));
    return false;
  }
}

/** Whether the webgpu backend this process set up runs on a software adapter. */
export function webgpuRunsOnSoftware(): boolean {
  return webgpuOnSoftware;
}
