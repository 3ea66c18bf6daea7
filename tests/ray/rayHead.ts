/**
 * A real single-node Ray head for the Ray tests, on loopback: `ray start --head --block` from the project's venv
 * (scripts/rayEnv.mjs), every port it opens chosen free (so two heads, or another Ray on the machine, never collide),
 * its own short --temp-dir (Ray's socket paths must stay under 107 bytes), 2 CPUs, no usage stats. stop() sends
 * SIGTERM to that `ray start` (which then ends this head's processes only, unlike `ray stop`, which ends every Ray
 * of the user) and waits for it, then SIGKILLs its process group if anything is left.
 *
 * When .venv-ray is missing the tests skip, naming the script, unless MARS_LAB_EXPECT_RAY=1 (CI), where they fail.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const RAY_BIN = path.join(PROJECT, '.venv-ray', 'bin', 'ray');
export const CLI = path.join(PROJECT, 'engine', 'bin', 'mars-lab.mjs');

/** Why the Ray tests cannot run here, or null when they can. */
export function rayMissing(): string | null {
  if (fs.existsSync(RAY_BIN)) return null;
  return `no Ray in ${path.dirname(path.dirname(RAY_BIN))}: run \`node scripts/rayEnv.mjs\` first (it makes the venv with ray[default] pinned)`;
}

/** MARS_LAB_EXPECT_RAY=1 (CI): a missing venv fails the tests instead of skipping them. */
export const expectRay = process.env.MARS_LAB_EXPECT_RAY === '1';

/** `n` distinct free TCP ports on 127.0.0.1 (held open together, so none is handed out twice). */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const s = net.createServer();
          s.once('error', reject);
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

export interface RayHead {
  url: string;
  dashboardPort: number;
  tempDir: string;
  stop: () => Promise<void>;
  /** What `ray start` printed (for a failure's message). */
  output: () => string;
}

async function reachable(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/api/version`, { signal: AbortSignal.timeout(2000) });
    return res.ok || res.status === 401; // token mode: up, and asking for the token
  } catch {
    return false;
  }
}

/** Starts a head and resolves once its Jobs API answers (at most `timeoutMs`); `env` adds to ray start's environment
 * (e.g. RAY_AUTH_MODE=token and RAY_AUTH_TOKEN for token mode). */
export async function startRayHead(opts: { timeoutMs?: number; env?: Record<string, string> } = {}): Promise<RayHead> {
  const timeoutMs = opts.timeoutMs ?? 90_000;
  const [gcs, dash, agentHttp, agentGrpc, client, runtimeEnv, metrics, nodeManager, objectManager] = await freePorts(9);
  const tempDir = fs.mkdtempSync(path.join(os.tmpdir().length < 20 ? os.tmpdir() : '/tmp', 'mlray-'));
  const args = [
    'start',
    '--head',
    '--block',
    '--node-ip-address=127.0.0.1',
    `--port=${gcs}`,
    '--dashboard-host=127.0.0.1',
    `--dashboard-port=${dash}`,
    `--dashboard-agent-listen-port=${agentHttp}`,
    `--dashboard-agent-grpc-port=${agentGrpc}`,
    `--ray-client-server-port=${client}`,
    `--runtime-env-agent-port=${runtimeEnv}`,
    `--metrics-export-port=${metrics}`,
    `--node-manager-port=${nodeManager}`,
    `--object-manager-port=${objectManager}`,
    // 0: workers bind ports the OS picks, instead of a fixed 10002-19999 range another head would share
    '--min-worker-port=0',
    '--max-worker-port=0',
    '--num-cpus=2',
    '--disable-usage-stats',
    `--temp-dir=${tempDir}`,
  ];
  let out = '';
  const child: ChildProcess = spawn(RAY_BIN, args, {
    detached: true, // its own process group: stop() can end whatever it leaves
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, RAY_USAGE_STATS_ENABLED: '0', PYTHONUNBUFFERED: '1', ...opts.env },
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  let exited = false;
  const exitedP = new Promise<void>((r) => child.on('exit', () => ((exited = true), r())));
  const url = `http://127.0.0.1:${dash}`;
  const stop = async () => {
    if (!exited) {
      child.kill('SIGTERM');
      await Promise.race([exitedP, new Promise((r) => setTimeout(r, 20_000))]);
    }
    try {
      process.kill(-child.pid!, 'SIGKILL'); // anything of this head's group still there
    } catch {
      // the group is gone
    }
    fs.rmSync(tempDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + timeoutMs;
  while (!(await reachable(url))) {
    if (exited || Date.now() > deadline) {
      await stop();
      throw new Error(
        `the Ray head did not come up${exited ? ' (ray start exited)' : ` in ${timeoutMs / 1000} s`}:\n${out.slice(-3000)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return { url, dashboardPort: dash!, tempDir, stop, output: () => out };
}
