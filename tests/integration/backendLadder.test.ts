/**
 * The backend ladder's order and its GPU rungs (issue 16), run as a user runs `doctor`: webgpu ranks above tensorflow
 * (tfjs-node-gpu is pinned to libtensorflow 2.9.1 / CUDA 11.2 and has no code for current GPUs); without a GPU,
 * `--backend webgpu` runs on Mesa's llvmpipe through Dawn's OpenGL backend; tfjs-node(-gpu) is no dependency (its
 * installer downloads libtensorflow from outside the npm registry) and doctor says how to add it.
 * A GPU and a tensorflow build are simulated by stand-in packages (tests/helpers/fakeTfjsNodeGpu).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedBackends } from '../helpers/backends';
import { cli } from '../helpers/cli';

interface Attempt {
  backend: string;
  package: string;
  status: string;
  detail: string;
}
interface Doctor {
  chosen: string;
  attempts: Attempt[];
  threads: number;
  threadsDetail: string;
}

const register = pathToFileURL(path.resolve('tests/helpers/fakeTfjsNodeGpu/register.mjs')).href;
const withStandIns = (env: NodeJS.ProcessEnv) => ({
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${register}`.trim(),
  ...env,
});
/** A Vulkan loader that finds no driver: no GPU adapter, whatever this machine has. */
const NO_VULKAN_DRIVER = { VK_ICD_FILENAMES: '/nonexistent/icd.json', VK_DRIVER_FILES: '/nonexistent/icd.json' };
const webgpuExpected = expectedBackends().includes('webgpu');

let libDir: string;
beforeAll(() => {
  // The ladder looks for the Vulkan loader before it loads Dawn; the stand-in needs only the file to be there.
  libDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-ladder-'));
  fs.writeFileSync(path.join(libDir, 'libvulkan.so.1'), '');
});
afterAll(() => fs.rmSync(libDir, { recursive: true, force: true }));

describe('the backend ladder', () => {
  it('with a GPU adapter and a tensorflow build both loadable, webgpu is chosen and tensorflow is not tried', async (ctx) => {
    const { code, stdout, stderr } = await cli(
      ['doctor', '--json'],
      withStandIns({
        MARS_LAB_FAKE_TFJS_NODE_GPU: 'cpu-only',
        MARS_LAB_FAKE_WEBGPU: 'hardware',
        LD_LIBRARY_PATH: [libDir, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':'),
      }),
    );
    expect(code, stderr).toBe(0);
    const r = JSON.parse(stdout) as Doctor;
    const webgpu = r.attempts.find((a) => a.backend === 'webgpu')!;
    // The stand-in's adapter is Mesa's llvmpipe: where that is missing there is nothing to rank.
    if (webgpu.status === 'no-adapter' && !webgpuExpected) {
      ctx.skip(`no OpenGL adapter for the stand-in: ${webgpu.detail}`);
    }
    expect(r.chosen).toBe('webgpu');
    expect(webgpu).toMatchObject({ status: 'chosen', detail: 'adapter: stand-in hardware adapter' });
    expect(r.attempts.filter((a) => a.backend === 'tensorflow')).toEqual([
      { backend: 'tensorflow', package: '-', status: 'not-tried', detail: 'webgpu ranks higher and loaded' },
    ]);
    expect(r.threadsDetail).toBe('kernels run on the GPU');
  });

  it('without a GPU adapter, tensorflow is next: webgpu is tried first and says how to force the software adapter', async () => {
    const { code, stdout, stderr } = await cli(
      ['doctor', '--json'],
      withStandIns({ MARS_LAB_FAKE_TFJS_NODE_GPU: 'cpu-only', ...NO_VULKAN_DRIVER }),
    );
    expect(code, stderr).toBe(0);
    const r = JSON.parse(stdout) as Doctor;
    expect(r.chosen).toBe('tensorflow');
    expect(r.attempts.map((a) => a.backend)).toEqual(['webgpu', 'tensorflow', 'wasm', 'cpu']);
    expect(r.attempts[0]!.status).toBe('no-adapter');
    expect(r.attempts[0]!.detail).toMatch(/^no hardware adapter: .*--backend webgpu also tries a software adapter/);
  });

  it("forced without a GPU, webgpu runs on Mesa's llvmpipe through Dawn's OpenGL backend, and says so", async (ctx) => {
    const { code, stdout, stderr } = await cli(['doctor', '--json', '--backend', 'webgpu'], NO_VULKAN_DRIVER);
    if (code !== 0 && !webgpuExpected) ctx.skip(`no software adapter here: ${stderr.trim()}`);
    expect(code, stderr).toBe(0);
    const r = JSON.parse(stdout) as Doctor;
    expect(r.chosen).toBe('webgpu');
    const chosen = r.attempts.find((a) => a.status === 'chosen')!;
    expect(chosen.package).toBe('@tensorflow/tfjs-backend-webgpu');
    expect(chosen.detail).toMatch(
      /^adapter: llvmpipe.* \(software, through Dawn's OpenGL backend at WebGPU's compatibility level, as no hardware adapter was found: /,
    );
    expect(r.threadsDetail).toMatch(/software adapter/);
  });
});

describe('tfjs-node / tfjs-node-gpu are no dependency of mars-lab', () => {
  it('package.json and its lock hold neither (their installer downloads libtensorflow from outside the registry)', () => {
    const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as Record<string, Record<string, string>>;
    const lock = JSON.parse(fs.readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, unknown> };
    for (const name of ['@tensorflow/tfjs-node', '@tensorflow/tfjs-node-gpu']) {
      for (const field of ['dependencies', 'optionalDependencies', 'devDependencies']) {
        expect(pkg[field]?.[name], `${field} ${name}`).toBeUndefined();
      }
      expect(lock.packages[`node_modules/${name}`], `package-lock.json ${name}`).toBeUndefined();
    }
  });

  it('forced where it is not installed: the error names the npm command that adds it', async (ctx) => {
    if (fs.existsSync(path.resolve('node_modules/@tensorflow/tfjs-node-gpu'))) {
      ctx.skip('@tensorflow/tfjs-node-gpu is installed here');
    }
    const { code, stderr } = await cli(['doctor', '--backend', 'tensorflow']);
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /@tensorflow\/tfjs-node-gpu: not-installed \(not installed: no dependency of mars-lab .*'npm install @tensorflow\/tfjs-node-gpu@4\.22\.0'/,
    );
  });
});
