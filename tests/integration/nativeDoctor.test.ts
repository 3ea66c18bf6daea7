/**
 * `doctor`'s words on the GPU rungs (issue 16), run as a user runs it: which rung suits a current NVIDIA GPU and what
 * it needs, that the ladder tries it first, how to add the tensorflow build (no dependency of mars-lab), and a tensorflow package that npm installed without its libtensorflow (its install script's download
 * failed or was skipped, as on every offline `npm ci`) said in plain words rather than only as a missing file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli';

describe('doctor on the GPU rungs', () => {
  it('names webgpu as the rung for a current NVIDIA GPU, what it needs, and what the tensorflow GPU build needs', async (ctx) => {
    if (process.platform !== 'linux') ctx.skip('the GPU lines are printed on Linux only');
    const { code, stdout, stderr } = await cli(['doctor', '--backend', 'cpu']);
    expect(code, stderr).toBe(0);
    const line = stdout.split('\n').find((l) => l.startsWith('GPU rung: '));
    expect(line).toMatch(
      /^GPU rung: webgpu .*Vulkan ICD \(nvidia_icd\.json\) and libvulkan1.*NVIDIA_DRIVER_CAPABILITIES including graphics/,
    );
    expect(line).toMatch(
      /tfjs-node-gpu 4\.22, last released 2024-10\) needs libtensorflow 2\.9\.1 with CUDA 11\.2 and cuDNN 8\.1 and has no machine code for Hopper or Blackwell/,
    );
    expect(line).toMatch(/the ladder tries it before tensorflow/);
    expect(line).toMatch(/no dependency of mars-lab: `npm install @tensorflow\/tfjs-node-gpu@4\.22\.0` adds it/);
  });

  it('a tensorflow package installed without its native binding is explained, where this machine has one', async (ctx) => {
    const pkg = path.resolve('node_modules/@tensorflow/tfjs-node');
    if (!fs.existsSync(pkg)) ctx.skip('@tensorflow/tfjs-node is not installed here');
    if (fs.existsSync(path.join(pkg, 'lib', 'napi-v8', 'tfjs_binding.node'))) {
      ctx.skip('@tensorflow/tfjs-node has its binding here');
    }
    const { code, stdout, stderr } = await cli(['doctor']);
    expect(code, stderr).toBe(0);
    const line = stdout.split('\n').find((l) => l.includes('@tensorflow/tfjs-node:'))!;
    expect(line).toMatch(/^ {2}tensorflow failed +@tensorflow\/tfjs-node: .*tfjs_binding\.node\) can not be found/);
    expect(line).toMatch(
      /\[installed without its native part: its install script downloads libtensorflow from outside the npm registry, and that download failed or was skipped/,
    );
  });
});
