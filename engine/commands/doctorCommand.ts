/** `doctor`: which TensorFlow.js backend this machine gets, and why not the others; which kernel runs matrix products. */
import type { Command } from 'commander';
import {
  CUDA_LIBRARIES,
  initBackend,
  missingCudaLibraries,
  vulkanEnvironment,
  type BackendName,
  type BackendReport,
  type VulkanEnvironment,
} from '../tensor/backend';
import type { NativeKernelReport } from '../tensor/native/status';
import { defaultBlasThreads } from '../tensor/native/addon';
import { ENGINE_VERSION } from '../base/version';
import { backendOption, blasThreadsFor, blasThreadsOption } from './options';

/** What the GPU rungs of the ladder need from the machine, whichever backend was chosen. */
interface GpuLibraries {
  /** webgpu on Linux: the Vulkan loader and driver manifests Dawn would use. */
  vulkan: VulkanEnvironment;
  /** tensorflow's GPU build: the CUDA 11.2 / cuDNN 8.1 libraries it opens, and those the dynamic linker would not find. */
  cuda: { needs: readonly string[]; missing: string[] };
}

function gpuLibraries(): GpuLibraries {
  return { vulkan: vulkanEnvironment(), cuda: { needs: CUDA_LIBRARIES, missing: missingCudaLibraries() } };
}

function formatGpu(g: GpuLibraries): string[] {
  const icds = g.vulkan.icds.length ? g.vulkan.icds.join(', ') : 'none';
  const cuda =
    g.cuda.missing.length === 0
      ? 'all found'
      : g.cuda.missing.length === g.cuda.needs.length
        ? 'none found'
        : `missing ${g.cuda.missing.join(', ')}`;
  return [
    `vulkan (webgpu): loader ${g.vulkan.loader ?? 'libvulkan.so.1 not found'}; driver manifests: ${icds}`,
    `CUDA 11.2 / cuDNN 8.1 (tensorflow GPU build): ${cuda}`,
    GPU_RUNG,
  ];
}

/**
 * Which GPU rung fits a current NVIDIA machine (issue 16), and why the ladder tries webgpu before tensorflow. webgpu needs
 * only the driver's Vulkan side; the tensorflow GPU build is pinned to a CUDA generation that current GPUs and drivers
 * have left behind, and is no dependency of mars-lab (its installer downloads libtensorflow from outside the registry).
 */
export const GPU_RUNG =
  'GPU rung: webgpu (Dawn, inside the `webgpu` npm package, headless over the Vulkan driver) is the one for a current NVIDIA GPU, ' +
  'and the ladder tries it before tensorflow: ' +
  "it needs the driver's Vulkan ICD (nvidia_icd.json) and libvulkan1, and in a container NVIDIA_DRIVER_CAPABILITIES including graphics. " +
  'The tensorflow GPU build (@tensorflow/tfjs-node-gpu 4.22, last released 2024-10) needs libtensorflow 2.9.1 with CUDA 11.2 and cuDNN 8.1 ' +
  'and has no machine code for Hopper or Blackwell GPUs; it is no dependency of mars-lab: `npm install @tensorflow/tfjs-node-gpu@4.22.0` adds it ' +
  "(its installer downloads libtensorflow from storage.googleapis.com). Without a GPU, `--backend webgpu` runs on Mesa's llvmpipe (software, slower than wasm)";

/** A tensorflow attempt that failed because its install script never fetched libtensorflow: say so in plain words. */
function explainAttempt(a: BackendReport['attempts'][number]): string {
  if (
    a.backend === 'tensorflow' &&
    a.status === 'failed' &&
    /tfjs_binding\.node\S* can ?not be found/i.test(a.detail)
  ) {
    return `${a.detail} [installed without its native part: its install script downloads libtensorflow from outside the npm registry, and that download failed or was skipped when npm installed it]`;
  }
  return a.detail;
}

/** The kernel path of matrix products (issue 16): OpenBLAS with its core, the own kernel, or none, and why. */
function formatNative(n: NativeKernelReport): string {
  return `${n.active ? 'native' : "the backend's own"} — ${n.detail}`;
}

/** Why the default thread count is what it is: every core, or this process's share beside its worker slots. */
function defaultThreadsText(): string {
  const d = defaultBlasThreads();
  const share =
    d.slots === 1
      ? `the default: every core of ${d.cores} for a run alone`
      : `the default: ${d.cores} cores shared by ${d.slots} worker slots (MARS_LAB_WORKER_SLOTS)`;
  return `${share}; set another with --blas-threads N or blasThreads in the run config`;
}

/** The BLAS thread count in effect and where it came from; how the optimiser's update runs. */
function formatNativeExtras(n: NativeKernelReport): string[] {
  const from = {
    default: defaultThreadsText(),
    config: "the run config's blasThreads",
    environment: 'MARS_LAB_BLAS_THREADS',
    flag: '--blas-threads',
  }[n.threadsFrom];
  const threads =
    n.active && n.kernel === 'openblas'
      ? `${n.threads} (${from})`
      : `${n.threads} (${n.active ? 'the own kernel has one thread' : 'no native products'})`;
  return [
    `BLAS threads: ${threads}`,
    `optimiser (Adam): ${n.adam ? 'native' : 'tensor ops'} — ${n.adamDetail}`,
    `transformer ops (RMSNorm, SwiGLU, RoPE, log-softmax, gathers): ${n.fused ? 'native' : 'tensor ops'} — ${n.fusedDetail}`,
  ];
}

function formatDoctor(r: BackendReport, g: GpuLibraries): string {
  const lines = [`backend: ${r.chosen}${r.forced ? ' (forced with --backend)' : ''}`];
  for (const a of r.attempts) {
    lines.push(
      `  ${a.backend.padEnd(10)} ${a.status.padEnd(16)} ${a.package === '-' ? '' : a.package + ': '}${explainAttempt(a)}`,
    );
  }
  lines.push(`threads: ${r.threads} (${r.threadsDetail})`);
  lines.push(`matrix products: ${formatNative(r.native)}`);
  lines.push(...formatNativeExtras(r.native));
  if (r.simd !== null) lines.push(`wasm SIMD: ${r.simd ? 'yes' : 'no'}`);
  lines.push(`platform: ${r.platform}, ${r.cpus} CPU cores`);
  if (r.platform.startsWith('linux')) lines.push(...formatGpu(g));
  lines.push(
    `versions: mars-lab ${ENGINE_VERSION}, ${Object.entries(r.versions)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  return lines.join('\n');
}

export function registerDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description(
      'show which TensorFlow.js backend is chosen, why the others are not, the matrix-product kernel, threads and versions',
    )
    .option('--json', 'print JSON')
    .addOption(backendOption())
    .addOption(blasThreadsOption())
    .action(async (opts: { json?: boolean; backend?: BackendName; blasThreads?: number }) => {
      const report = await initBackend({ force: opts.backend, blasThreads: blasThreadsFor(opts.blasThreads) });
      const gpu = gpuLibraries();
      console.log(
        opts.json ? JSON.stringify({ engine: ENGINE_VERSION, ...report, gpu }, null, 2) : formatDoctor(report, gpu),
      );
    });
}
