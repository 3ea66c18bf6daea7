/**
 * The launch form's "ship the project with the jobs" (engine/api/cluster/clusterShip.ts), through callApi as a window calls it.
 * Without Ray: a study on a cluster ships by default only from a packaged app (a project inside app.asar) whose host
 * has no $MARS_LAB_RAY_PROJECT (studyOptions says which), and a build older than its sources is refused in one line naming ray.ship, before any cluster is asked
 * and with nothing recorded. Against a real single-node Ray head (tests/ray/rayHead.ts; no fake of the Jobs API): the
 * app's startStudy with ship on and NO $MARS_LAB_RAY_PROJECT packs and uploads the project (its phases pushed as
 * shipProgress events before it answers), submits a 2-step seqgrpo-copy job whose entrypoint names no path of this
 * checkout and whose working_dir is the uploaded package, and the run folder arrives in the home; a package over the
 * cap is one line with nothing recorded. In a headless Chromium (when there is one) the launch form's "ship" box does the
 * same, showing the host's progress while it starts, and the Runs view marks the study as shipped. Needs `npm run build` of this checkout first (a stale build is refused; the form needs the renderer):
 * run it in a clean worktree while others edit sources.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium, launchChromium } from '../helpers/chromium';
import { createClusterHost, RAY_PROJECT_ENV } from '../../engine/api/cluster/clusterMethods';
import type { ApiEvent, ApiStudyView } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type ApiHandlers, type Host } from '../../engine/api/host/host';
import { allowedRoots } from '../../engine/api/host/hostGuards';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { DEFAULT_RENDERER_DIR, startWebServer } from '../../engine/api/web/webServer';
import { RayJobsClient } from '../../engine/cluster/ray/jobsClient';
import { PRESETS_DIR } from '../../engine/runs/presets/presets';
import { listStudyIds, readStudy } from '../../engine/cluster/studies/studyRecord';
import { expectRay, freePorts, PROJECT, rayMissing, startRayHead, type RayHead } from './rayHead';

const missing = rayMissing();
if (missing && !expectRay) console.warn(`tests/ray/appShip.test.ts (its Ray part) skipped: ${missing}`);

/** The cluster methods alone, on `home`, with `env` as the host's environment. */
function clusterApi(home: string, env: NodeJS.ProcessEnv, extra: { projectDir?: string; shipCap?: number } = {}) {
  const events: ApiEvent[] = [];
  const host = createClusterHost({
    home,
    presetsDir: PRESETS_DIR,
    roots: allowedRoots(home),
    broadcast: (e) => events.push(e),
    env,
    ...extra,
  });
  const api = <T>(method: string, params: unknown) =>
    callApi(host.handlers as unknown as ApiHandlers, method, params) as Promise<T>;
  const refusal = (method: string, params: unknown) =>
    api(method, params).then(
      () => 'answered',
      (e: unknown) => (e as Error).message,
    );
  return { host, events, api, refusal };
}

const withoutProject = (): NodeJS.ProcessEnv => {
  const env = { ...process.env };
  delete env[RAY_PROJECT_ENV];
  return env;
};

describe('shipping from the app, without a cluster', () => {
  let root: string;
  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-appship-'));
  });
  afterAll(() => {
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it('ships by default from a packaged app that names no project folder on the cluster, and only then', async () => {
    const home = path.join(root, 'default');
    const packaged = path.join(root, 'resources', 'app.asar'); // where a packaged app's project is
    fs.mkdirSync(packaged, { recursive: true });
    const byDefault = async (projectDir: string, env: NodeJS.ProcessEnv) =>
      (
        await clusterApi(home, env, { projectDir }).api<{ shipByDefault?: boolean }>('studyOptions', {
          preset: 'seqgrpo-copy',
        })
      ).shipByDefault;
    expect(await byDefault(packaged, withoutProject())).toBe(true);
    expect(await byDefault(packaged, { ...withoutProject(), [RAY_PROJECT_ENV]: '/opt/mars-lab' })).toBe(false);
    expect(await byDefault(PROJECT, withoutProject())).toBe(false); // a checkout: the form's choice
    const { refusal } = clusterApi(home, withoutProject());
    expect(await refusal('startStudy', { preset: 'seqgrpo-copy', seeds: [0], ray: { url: 'x', ship: 'yes' } })).toMatch(
      /^startStudy: invalid request \(ray\.ship: /,
    );
  });

  it('refuses a stale build in one line naming ray.ship, before asking the cluster, recording nothing', async () => {
    const home = path.join(root, 'stale');
    const project = path.join(root, 'project');
    fs.mkdirSync(path.join(project, 'engine/commands'), { recursive: true });
    fs.mkdirSync(path.join(project, 'out/cli'), { recursive: true });
    fs.writeFileSync(path.join(project, 'engine/commands/cli.ts'), '// a source edited after the build\n');
    fs.writeFileSync(path.join(project, 'out/cli/index.js'), '// the build\n');
    fs.writeFileSync(
      path.join(project, 'out/cli/build.json'),
      JSON.stringify({ version: 1, builtAt: 1000, sources: ['engine/commands/cli.ts'] }),
    );
    const [closed] = await freePorts(1);
    const url = `http://127.0.0.1:${closed}`;
    // asked for, with or without a project folder named for the cluster
    for (const env of [withoutProject(), { ...withoutProject(), [RAY_PROJECT_ENV]: '/opt/mars-lab' }]) {
      const { refusal } = clusterApi(home, env, { projectDir: project });
      expect(await refusal('startStudy', { preset: 'seqgrpo-copy', seeds: [0], ray: { url, ship: true } })).toBe(
        'ray.ship: the app sends its built engine, and it is not up to date (engine/commands/cli.ts changed after the build): run npm run build, or untick ship',
      );
    }
    // not asked for (a checkout's default): the stale build is not this study's business; the cluster is asked
    const { refusal } = clusterApi(home, withoutProject(), { projectDir: project });
    for (const ray of [{ url }, { url, ship: false }]) {
      expect(await refusal('startStudy', { preset: 'seqgrpo-copy', seeds: [0], ray })).toMatch(
        /^Ray cluster at http:\/\/127\.0\.0\.1:\d+ is unreachable/,
      );
    }
    expect(listStudyIds(home)).toEqual([]);
  });
});

describe.runIf(expectRay || !missing)('shipping from the app to a real Ray head', () => {
  let head: RayHead;
  let home: string;
  let host: Host;
  let savedProject: string | undefined;
  const events: ApiEvent[] = [];
  const waiters = new Set<() => void>();
  const api = <T>(method: string, params: unknown) => callApi(host.handlers, method, params) as Promise<T>;
  const until = (test: () => boolean, what: string, ms = 240_000) =>
    new Promise<void>((resolve, reject) => {
      if (test()) return resolve();
      const t = setTimeout(() => (waiters.delete(check), reject(new Error(`timed out waiting for ${what}`))), ms);
      const check = () => {
        if (!test()) return;
        clearTimeout(t);
        waiters.delete(check);
        resolve();
      };
      waiters.add(check);
    });
  const lastView = (id: string): ApiStudyView | undefined =>
    events.findLast(
      (e): e is Extract<ApiEvent, { type: 'studyChanged' }> => e.type === 'studyChanged' && e.study.id === id,
    )?.study;

  beforeAll(async () => {
    if (missing) throw new Error(`MARS_LAB_EXPECT_RAY=1 but ${missing}`);
    // the app as packaged: no project folder named for the cluster
    savedProject = process.env[RAY_PROJECT_ENV];
    delete process.env[RAY_PROJECT_ENV];
    head = await startRayHead();
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-appship-ray-'));
    host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
    host.subscribe((e) => {
      events.push(e);
      for (const w of [...waiters]) w();
    });
  }, 120_000);

  afterAll(async () => {
    await host?.close();
    await head?.stop();
    if (savedProject !== undefined) process.env[RAY_PROJECT_ENV] = savedProject;
    if (home) fs.rmSync(home, { recursive: true, force: true });
  }, 60_000);

  it('ships the project, runs a 2-step job from it with no path of this checkout, and the run arrives', async () => {
    const { study } = await api<{ study: ApiStudyView }>('startStudy', {
      preset: 'seqgrpo-copy',
      sets: ['budget.steps=2'],
      seeds: [0],
      ray: { url: head.url, ship: true },
    });
    // packing, uploading, shipped: pushed, in order, before the answer
    const ship = events.filter((e): e is Extract<ApiEvent, { type: 'shipProgress' }> => e.type === 'shipProgress');
    expect(ship.map((e) => e.phase)).toEqual(['packing', 'uploading', 'shipped']);
    expect(ship[2]!.message).toMatch(
      /^shipped as gcs:\/\/_ray_pkg_[0-9a-f]{40}\.zip \(\d+\.\d MiB, \d+ files; uploaded in /,
    );
    const uri = /gcs:\/\/_ray_pkg_[0-9a-f]{40}\.zip/.exec(ship[2]!.message)![0];
    expect(study.where).toMatchObject({ kind: 'ray', url: head.url, shipped: uri });
    expect(readStudy(home, study.id).where).toMatchObject({
      kind: 'ray',
      project: '.',
      runtimeEnv: { working_dir: uri },
    });

    await until(() => lastView(study.id)?.link === 'idle', 'the study to end');
    const runId = study.runs[0]!.runId;
    expect(lastView(study.id)!.runs[0]).toMatchObject({ state: 'finished', jobStatus: 'SUCCEEDED', step: 2 });
    const job = await new RayJobsClient({ url: head.url }).job(runId);
    expect(job.entrypoint).toMatch(/^node engine\/bin\/mars-lab\.mjs train --preset seqgrpo-copy /);
    expect(job.entrypoint).not.toContain(PROJECT);
    expect(job.runtime_env).toMatchObject({ working_dir: uri });
    // the run folder arrived in the home (the cluster's home is this one), as the watcher shows local runs
    const metrics = fs
      .readFileSync(path.join(home, 'runs', runId, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(metrics).toHaveLength(2);
    expect(JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'run.json'), 'utf8')).status).toBe('finished');
    expect(events.some((e) => e.type === 'runCreated' && e.runId === runId)).toBe(true);

    // over the cap (a small one; the zip comes from the home's cache): one line, nothing recorded or submitted
    const before = listStudyIds(home);
    const capped = clusterApi(home, withoutProject(), { shipCap: 2 ** 20 });
    const message = await capped.refusal('startStudy', {
      preset: 'seqgrpo-copy',
      seeds: [1],
      ray: { url: head.url, ship: true },
    });
    expect(message).toMatch(
      /^ray\.ship: the project packs to \d+\.\d MiB, over the 1\.0 MiB Ray's dashboard takes in one upload; run the jobs from a job image instead \(set MARS_LAB_RAY_PROJECT where the app starts, and untick ship\)$/,
    );
    expect(listStudyIds(home)).toEqual(before);
    await capped.host.close();
  }, 600_000);

  it.runIf(haveChromium)(
    'the launch form ships when ticked: its progress shown while it starts, the study marked as shipped',
    async () => {
      const index = path.join(DEFAULT_RENDERER_DIR, 'index.html');
      if (!fs.existsSync(index)) throw new Error(`the built renderer is missing (${index}): run npm run build`);
      const uiHome = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-appship-ui-')); // its own cache: packed cold
      const uiHost = await createHost({ home: uiHome, launcher: nodeRunLauncher(), transport: 'web' });
      const server = await startWebServer({ host: uiHost, port: 0 });
      const browser = await launchChromium();
      const pageErrors: string[] = [];
      try {
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        page.on('pageerror', (error) => pageErrors.push(error.message));
        await page.goto(`${server.url}#/launch?preset=seqgrpo-copy`);
        await page.getByTestId('launch-form').waitFor();
        await page.locator('[data-path="budget.steps"] input').first().fill('2');
        await page.getByTestId('where-ray').check();
        const ship = page.getByTestId('ray-ship');
        expect(await ship.isChecked()).toBe(false); // a checkout: the form's choice
        await ship.check();
        await page.getByTestId('ray-url').fill(head.url);
        await expect.poll(() => page.getByTestId('start-run').isDisabled()).toBe(false);
        await page.getByTestId('start-run').click();
        const progress = page.getByTestId('ship-progress');
        await progress.waitFor({ timeout: 60_000 });
        expect(await progress.textContent()).toMatch(/^(packing the project for the cluster|packed in|shipped as)/);
        await page.waitForURL(/#\/runs/, { timeout: 180_000 });
        const [id] = listStudyIds(uiHome);
        expect(id).toBeDefined();
        const study = page.locator(`[data-testid="cluster-study"][data-study="${id}"]`);
        await study.waitFor();
        expect(await study.getByTestId('cluster-shipped').getAttribute('title')).toMatch(
          /shipped: gcs:\/\/_ray_pkg_[0-9a-f]{40}\.zip$/,
        );
        await expect.poll(() => study.getAttribute('data-link'), { timeout: 180_000 }).toBe('idle');
        expect(await study.getByTestId('cluster-run').first().getAttribute('data-state')).toBe('finished');
        expect(pageErrors).toEqual([]);
      } finally {
        await browser.close();
        await server.close();
        await uiHost.close();
        fs.rmSync(uiHome, { recursive: true, force: true });
      }
    },
    600_000,
  );
});

if (!expectRay && missing !== null) {
  describe('shipping from the app to a real Ray head, without Ray', () => {
    it.skip(`skipped: ${missing}`, () => {});
  });
}
