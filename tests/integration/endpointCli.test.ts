/**
 * `mars-lab eval` with endpoint agents, as a user runs it: a MARTI config whose agents name a `mars-lab serve-model`
 * child process (its key from --token-env), no checkpoint. The API key never reaches the home folder (eval.json, the
 * request journal), stdout or stderr — neither on success nor when the key is refused — and each fault is one line
 * with exit code 2.
 */
import fs from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkpointConfig } from '../../engine/runs/evaluation/evaluation';
import http from 'node:http';
import { cli, spawnCli } from '../helpers/cli';

const CK = path.resolve('resources/marti/base-tiny');
const SECRET = 'sk-mars-lab-test-7f3a9c1e5b';
let home: string;
let served: { baseUrl: string; model: string };
let stopServer: () => Promise<void>;

/** Every file under `dir`, read whole. */
function allText(dir: string): string {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => fs.readFileSync(path.join(e.parentPath, e.name), 'utf8'))
    .join('\n');
}

function writeConfig(name: string, baseUrl: string, over: Record<string, unknown> = {}): string {
  const c = JSON.parse(JSON.stringify(checkpointConfig(CK)));
  c.eval = { ...c.eval, items: 2, temperature: 0 };
  c.marti = { ...c.marti, evalNodes: 3, evalSearchTemperature: 0, tplus: { ...c.marti.tplus, enabled: false } };
  c.marti.agents.forEach(
    (a: Record<string, unknown>) =>
      (a.policy = {
        kind: 'endpoint',
        baseUrl,
        model: served.model,
        apiKeyEnv: 'MY_ENDPOINT_KEY',
        maxRetries: 0,
        ...over,
      }),
  );
  const file = path.join(home, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify(c));
  return file;
}

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-endpoint-cli-'));
  await new Promise<void>((resolve, reject) => {
    const { child, exited } = spawnCli(
      ['serve-model', '--checkpoint', CK, '--port', '0', '--json', '--token-env', 'SERVE_KEY'],
      { SERVE_KEY: SECRET },
      (line) => {
        expect(line).not.toContain(SECRET); // a key given by --token-env is not printed
        served = JSON.parse(line);
        stopServer = async () => void (child.kill('SIGTERM'), await exited);
        resolve();
      },
    );
    void exited.then((code) => reject(new Error(`serve-model exited with ${code}`)));
  });
}, 120_000);
afterAll(async () => {
  await stopServer?.();
  fs.rmSync(home, { recursive: true, force: true });
});

describe('mars-lab eval with endpoint agents', () => {
  it('evaluates without a checkpoint and writes no key anywhere', async () => {
    const cfg = writeConfig('ok', served.baseUrl);
    const r = await cli(['eval', '--config', cfg, '--home', home, '--json'], { MY_ENDPOINT_KEY: SECRET });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.items).toHaveLength(2);
    expect(out.metrics).toHaveProperty('pass1');
    expect(out.journal.fresh).toBeGreaterThan(0);
    expect(fs.existsSync(out.file)).toBe(true);
    expect(r.stdout).not.toContain(SECRET);
    expect(allText(home)).not.toContain(SECRET);
    // run again: every answer is replayed from the journal
    const again = JSON.parse(
      (await cli(['eval', '--config', cfg, '--home', home, '--json'], { MY_ENDPOINT_KEY: SECRET })).stdout,
    );
    expect(again.journal).toMatchObject({ fresh: 0, replayed: out.journal.fresh });
    expect(again.items).toEqual(out.items);
  });

  it('a refused key is one line, exit code 2, and the key is not in it', async () => {
    const wrong = `${SECRET}-wrong`;
    const cfg = writeConfig('wrongkey', served.baseUrl);
    const r = await cli(['eval', '--config', cfg, '--home', home, '--fresh'], { MY_ENDPOINT_KEY: wrong });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^mars-lab: MARTI agent alpha\+beta \(base-tiny at .*\): the server refused the API key \(401\); set MY_ENDPOINT_KEY to a key this server accepts$/,
      ),
    ]);
    expect(r.stderr + r.stdout + allText(home)).not.toContain(wrong);
  });

  it('an unset key variable, a wrong model name and an unreachable endpoint: one line each, exit code 2', async () => {
    const unset = await cli(['eval', '--config', writeConfig('unset', served.baseUrl), '--home', home], {
      MY_ENDPOINT_KEY: '',
    });
    expect(unset.code).toBe(2);
    expect(unset.stderr.trim()).toMatch(
      /^mars-lab: MARTI agent alpha\+beta: the environment variable MY_ENDPOINT_KEY \(apiKeyEnv\) is not set or empty; export it with the endpoint's API key$/,
    );

    const c404 = writeConfig('nomodel', served.baseUrl, { model: 'no-such-model' });
    const nf = await cli(['eval', '--config', c404, '--home', home], { MY_ENDPOINT_KEY: SECRET });
    expect(nf.code).toBe(2);
    expect(nf.stderr.trim().split('\n')).toHaveLength(1);
    expect(nf.stderr).toMatch(/not found \(404\): no model "no-such-model" there/);

    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const down = await cli(['eval', '--config', writeConfig('down', `http://127.0.0.1:${port}/v1`), '--home', home], {
      MY_ENDPOINT_KEY: SECRET,
    });
    expect(down.code).toBe(2);
    expect(down.stderr.trim().split('\n')).toHaveLength(1);
    expect(down.stderr).toMatch(/cannot reach the server \(ECONNREFUSED\)/);
    expect(allText(home)).not.toContain(SECRET);

    // a checkpoint is optional only when every policy is an endpoint
    const none = await cli(['eval', '--home', home]);
    expect([none.code, none.stderr.trim()]).toEqual([
      2,
      'mars-lab: eval: give --checkpoint DIR (or, for endpoint policies, --config FILE or --preset NAME)',
    ]);
    const plain = path.join(home, 'plain.json');
    fs.writeFileSync(plain, JSON.stringify(checkpointConfig(CK)));
    const noCk = await cli(['eval', '--config', plain, '--home', home]);
    expect([noCk.code, noCk.stderr.trim()]).toEqual([
      2,
      'mars-lab: eval: add --checkpoint DIR: this config names no endpoint policies (mars.policies, marti.agents[].policy)',
    ]);
  });

  it('Ctrl-C stops the evaluation: requests in flight are cancelled, the answered ones kept; one line, exit code 2', async () => {
    let seen = 0;
    const hanging: http.ServerResponse[] = [];
    const fake = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        // a server without a model list ("instructions": "auto" asks it once): raw prompts, as this test sends
        if (req.method === 'GET') return void (res.writeHead(404), res.end());
        if (++seen > 5) return void hanging.push(res); // never answers: the run is stopped while these wait
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ choices: [{ index: 0, text: 'map ( x ) <eos>', finish_reason: 'stop' }] }));
      });
    });
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/v1`;
    const cfg = writeConfig('stopped', url, { concurrency: 2, timeoutMs: 60_000 });
    const { child, exited } = spawnCli(
      ['eval', '--config', cfg, '--home', home],
      { MY_ENDPOINT_KEY: SECRET },
      () => {},
    );
    let stderr = '';
    child.stderr!.removeAllListeners('data');
    child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    while (hanging.length < 1) await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGINT');
    expect(await exited).toBe(2);
    expect(stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^mars-lab: eval stopped; 5 answers kept in .*requests\.jsonl: run the same command again to resume$/,
      ),
    ]);
    for (const r of hanging) r.destroy();
    fake.closeAllConnections();
    await new Promise((r) => fake.close(r));
  });
});
