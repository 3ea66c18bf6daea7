/**
 * The same tiny model trains on every backend present here, and the losses agree with the cpu backend's.
 * Each backend of the ladder has its own test; one that cannot initialise here (tensorflow without libtensorflow,
 * webgpu without an adapter) is skipped with the reason in the test's note, never silently dropped. webgpu runs here
 * without a GPU on Mesa's llvmpipe through Dawn's OpenGL backend (libegl-dev, libgl1-mesa-dri). Backends
 * named in MARS_LAB_EXPECT_BACKENDS (CI and bench/gpu.sh set webgpu) fail instead of skipping.
 * Then webgpu's AddN past the storage-buffer limit, and `doctor` on a tensorflow GPU build that cannot use CUDA
 * (simulated by a stand-in package).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloneModel } from '../../../engine/model/formats/hfWeights';
import { lastPositionLogits } from '../../../engine/model/inference';
import { Rng } from '../../../engine/random/prng';
import { Adam } from '../../../engine/rl/adam';
import { adamVariables, policyUpdate } from '../../../engine/rl/policyUpdate';
import { backendReport, CUDA_LIBRARIES, findSharedLibrary, tf, type BackendName } from '../../../engine/tensor/backend';
import { cli } from '../../helpers/cli';
import { fixedSamples } from '../../helpers/fixedSamples';
import { tinyModel } from '../../helpers/tinyModel';
import { expectedBackends, probeBackends, requireBackend, useBackend } from '../../helpers/backends';

const STEPS = 8;

interface Trained {
  losses: number[];
  gradNorms: number[];
  logits: number[];
  moved: number;
}

async function trainOn(backend: BackendName): Promise<Trained> {
  await useBackend(backend);
  const model = tinyModel(5, {}, 0.1);
  const reference = cloneModel(model, false);
  const opt = new Adam(adamVariables(model), { lr: 3e-3 });
  const samples = fixedSamples(model.config.vocab_size, 17, 6);
  const rng = new Rng(1);
  const initial = Array.from(await lastPositionLogits(model, samples[0]!.tokens));
  const losses: number[] = [];
  const gradNorms: number[] = [];
  for (let s = 0; s < STEPS; s++) {
    // Two epochs of two minibatches with a KL term: ℓold, ℓref and the clipped ratio all take part.
    const st = await policyUpdate(model, opt, samples, {
      loss: { kind: 'ppoToken', klCoef: 0.05 },
      epochs: 2,
      miniBatches: 2,
      rng,
      reference,
    });
    losses.push(st.total);
    gradNorms.push(st.gradNorm);
  }
  const logits = Array.from(await lastPositionLogits(model, samples[0]!.tokens));
  model.dispose();
  reference.dispose();
  opt.dispose();
  return { losses, gradNorms, logits, moved: Math.max(...logits.map((x, i) => Math.abs(x - initial[i]!))) };
}

// Probed while the file is collected, so that each backend's test is named, and skipped with its reason, up front.
const probes = await probeBackends();
console.info(
  probes.map((p) => (p.present ? `${p.backend}: present` : `${p.backend}: absent (${p.reason})`)).join('\n'),
);

let cpuRun: Promise<Trained> | null = null;
const onCpu = () => (cpuRun ??= trainOn('cpu'));

describe('training agrees across backends', () => {
  it('cpu and wasm are both present (the two that need no hardware)', () => {
    for (const b of ['cpu', 'wasm'] as const) {
      const p = probes.find((x) => x.backend === b)!;
      expect(p.present, `${b}: ${p.reason}`).toBe(true);
    }
  });

  it('backends named in MARS_LAB_EXPECT_BACKENDS are present', () => {
    for (const b of expectedBackends()) {
      const p = probes.find((x) => x.backend === b)!;
      expect(p.present, `${b} was expected but is absent: ${p.reason}`).toBe(true);
    }
  });

  it('cpu, the reference: the policy moves (agreement between models that did not train would mean nothing)', async () => {
    expect((await onCpu()).moved).toBeGreaterThan(0.5);
  });

  for (const probe of probes.filter((p) => p.backend !== 'cpu')) {
    it(`${probe.backend} trains the same model to cpu's losses, gradient norms and logits within float32 tolerance`, async (ctx) => {
      requireBackend(ctx, probe);
      const ref = await onCpu();
      const r = await trainOn(probe.backend);
      const used = backendReport()!.attempts.find((a) => a.status === 'chosen')!;
      console.info(`${probe.backend}: ${used.package}: ${used.detail}`);
      for (let s = 0; s < STEPS; s++) {
        expect(Math.abs(r.losses[s]! - ref.losses[s]!), `${probe.backend} step ${s} loss`).toBeLessThan(
          1e-3 * Math.max(1, Math.abs(ref.losses[s]!)),
        );
        expect(Math.abs(r.gradNorms[s]! - ref.gradNorms[s]!), `${probe.backend} step ${s} grad norm`).toBeLessThan(
          1e-3 * Math.max(1, ref.gradNorms[s]!),
        );
      }
      const worst = Math.max(...r.logits.map((x, i) => Math.abs(x - ref.logits[i]!)));
      expect(worst, `${probe.backend} final logits`).toBeLessThan(1e-2);
    });
  }
});

describe('webgpu kernels that tfjs-backend-webgpu gets wrong on its own', () => {
  const webgpu = probes.find((p) => p.backend === 'webgpu')!;
  it('addN of more tensors than a shader may bind (8 storage buffers by default) equals their sum', async (ctx) => {
    requireBackend(ctx, webgpu);
    await useBackend('webgpu');
    for (const n of [7, 8, 20, 70]) {
      const xs = Array.from({ length: n }, (_, i) => tf.fill([3, 5], i + 1));
      const sum = tf.addN(xs);
      const got = Array.from(await sum.data());
      expect(got, `addN of ${n}`).toEqual(Array(15).fill((n * (n + 1)) / 2));
      tf.dispose([...xs, sum]);
    }
  });
});

describe('doctor on a tensorflow GPU build without CUDA 11.2 / cuDNN 8.1 (simulated by a stand-in for @tensorflow/tfjs-node-gpu)', () => {
  // Every library the GPU build opens is present in a folder on LD_LIBRARY_PATH except cuDNN, so doctor must name
  // exactly that one as missing (unless this machine has it installed system-wide).
  let libDir: string;
  const cudnnOnSystem = findSharedLibrary('libcudnn.so.8') !== null;
  beforeAll(() => {
    libDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-cuda-'));
    for (const lib of CUDA_LIBRARIES) if (lib !== 'libcudnn.so.8') fs.writeFileSync(path.join(libDir, lib), '');
  });
  afterAll(() => fs.rmSync(libDir, { recursive: true, force: true }));
  const register = pathToFileURL(path.resolve('tests/helpers/fakeTfjsNodeGpu/register.mjs')).href;
  const env = (mode: 'missing-cudnn' | 'cpu-only') => ({
    MARS_LAB_FAKE_TFJS_NODE_GPU: mode,
    // No Vulkan driver, so that a GPU on this machine does not take the ladder's first rung before tensorflow.
    VK_ICD_FILENAMES: '/nonexistent/icd.json',
    VK_DRIVER_FILES: '/nonexistent/icd.json',
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${register}`.trim(),
    LD_LIBRARY_PATH: [libDir, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':'),
  });
  const missing = cudnnOnSystem ? /all of them were found here/ : /not found here: libcudnn\.so\.8$/;

  it('a CUDA library that will not load: the attempt failed, and says what the GPU build needs and what is missing', async () => {
    const { code, stdout, stderr } = await cli(['doctor', '--json'], env('missing-cudnn'));
    expect(code, stderr).toBe(0);
    const r = JSON.parse(stdout) as {
      chosen: string;
      attempts: { backend: string; package: string; status: string; detail: string }[];
      gpu: { cuda: { missing: string[] } };
    };
    const gpuBuild = r.attempts.find((a) => a.package === '@tensorflow/tfjs-node-gpu')!;
    expect(gpuBuild.status).toBe('failed');
    expect(gpuBuild.detail).toMatch(/^libcudnn\.so\.8: cannot open shared object file/);
    expect(gpuBuild.detail).toMatch(/needs CUDA 11\.2 and cuDNN 8\.1/);
    expect(gpuBuild.detail).toMatch(missing);
    expect(r.chosen).not.toBe('tensorflow');
    expect(r.gpu.cuda.missing).toEqual(cudnnOnSystem ? [] : ['libcudnn.so.8']);
  });

  it('forced with --backend tensorflow: the error carries the same explanation', async () => {
    const { code, stderr } = await cli(['doctor', '--backend', 'tensorflow'], env('missing-cudnn'));
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /Backend 'tensorflow' is not available: @tensorflow\/tfjs-node-gpu: failed \(libcudnn\.so\.8: cannot open/,
    );
    expect(stderr).toMatch(/needs CUDA 11\.2 and cuDNN 8\.1/);
  });

  it('loaded but without a GPU device: chosen, and doctor says it runs on the CPU and why', async () => {
    const { code, stdout, stderr } = await cli(['doctor'], env('cpu-only'));
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/^backend: tensorflow\n/);
    const line = stdout.split('\n').find((l) => l.includes('@tensorflow/tfjs-node-gpu'))!;
    expect(line).toMatch(
      /chosen +@tensorflow\/tfjs-node-gpu: libtensorflow through @tensorflow\/tfjs-node-gpu, but libtensorflow found no usable GPU and runs on the CPU/,
    );
    expect(line).toMatch(/needs CUDA 11\.2 and cuDNN 8\.1/);
    expect(line).toMatch(missing);
  });
});
