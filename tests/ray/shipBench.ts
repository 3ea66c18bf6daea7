/**
 * Measures what `study --ray URL --ship` costs (docs/results/ray.md): packing the project cold (trace + zip) and from
 * the cache, the upload through the dashboard's package API, and a job's start with the package as its working_dir
 * (Ray downloads and unpacks it on the node) against a job of the same run from the project at its path (run first:
 * a head's first job pays for Ray's own start); then a second shipped job on the same node (unpacked already). Each
 * repeat starts a fresh single-node head (tests/ray/rayHead.ts), so the first shipped job always downloads. One 2-step
 * `seqgrpo-copy` run a job, one job at a time.
 *
 *   npm run build && npx tsx tests/ray/shipBench.ts [--repeats 3] [--steps 2]
 * Needs the venv of scripts/rayEnv.mjs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RayJobsClient } from '../../engine/cluster/ray/jobsClient';
import { runStudyOnRay } from '../../engine/cluster/studies/rayStudy';
import { packProject } from '../../engine/cluster/studies/shipProject';
import { PROJECT_DIR } from '../../engine/cluster/studies/studyPlan';
import { studyLogFile } from '../../engine/cluster/studies/studyRecord';
import { rayMissing, startRayHead } from './rayHead';
import { planRayStudy, type RayWhere } from './rayStudyPlan';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : dflt;
}
const repeats = Number(arg('repeats', '3'));
const steps = Number(arg('steps', '2'));

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const sec = (ms: number) => (ms / 1000).toFixed(2);

/** Log timestamps "2026-12-01 17:26:53,400" (the head's local time) as epoch ms. */
function logTime(line: string): number | null {
  const m = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d),(\d{3})/.exec(line);
  return m ? new Date(`${m[1]}T${m[2]}.${m[3]}`).getTime() : null;
}

interface JobCost {
  /** From "Runtime env is setting up" to the entrypoint's first command: working_dir download, unpack, driver. */
  envMs: number;
  /** From the entrypoint's first command to train's done line. */
  runMs: number;
  /** Submit to Ray's SUCCEEDED, as this side saw it. */
  wallMs: number;
}

/** One single-run study as a Ray job; where the project comes from is `where`'s. */
async function oneJob(home: string, client: RayJobsClient, where: Partial<RayWhere>): Promise<JobCost> {
  const record = planRayStudy('seqgrpo-copy', [`budget.steps=${steps}`], {
    url: client.where,
    rayHome: home,
    project: PROJECT_DIR,
    node: process.execPath,
    ...where,
  });
  const t0 = performance.now();
  const done = await runStudyOnRay(home, record, client, { setup: 'echo "bench: entrypoint at $(date +%s%3N)"' }).done;
  const wallMs = performance.now() - t0;
  const run = done.runs[0]!;
  if (run.state !== 'finished') throw new Error(`run ${run.runId} ${run.state}: ${run.message}`);
  const log = fs.readFileSync(studyLogFile(home, done.id, run.runId), 'utf8').split('\n');
  const envAt = logTime(log.find((l) => l.includes('Runtime env is setting up'))!)!;
  const entryAt = Number(/bench: entrypoint at (\d+)/.exec(log.join('\n'))![1]);
  const doneLine = JSON.parse(log.find((l) => l.startsWith('{"type":"done"'))!) as { metrics: { time: number } };
  return { envMs: entryAt - envAt, runMs: doneLine.metrics.time * 1000 - entryAt, wallMs };
}

async function main() {
  const missing = rayMissing();
  if (missing) throw new Error(missing);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-shipbench-'));
  const rows: Record<string, number[]> = {};
  const add = (k: string, v: number) => (rows[k] ??= []).push(v);
  let size = '';
  try {
    for (let r = 0; r < repeats; r++) {
      const cacheDir = path.join(root, `cache${r}`);
      const cold = await packProject({ root: PROJECT_DIR, cacheDir });
      add('pack, cold (trace with @vercel/nft + zip)', cold.packMs);
      add('pack, from the cache', (await packProject({ root: PROJECT_DIR, cacheDir })).packMs);
      size = `${(cold.bytes / 2 ** 20).toFixed(1)} MiB, ${cold.files} files`;
      // a loaded machine can time out the dashboard's start: one more try
      const head = await startRayHead().catch(() => startRayHead());
      try {
        const client = new RayJobsClient({ url: head.url });
        let t = performance.now();
        if (await client.packageExists(cold.uri)) throw new Error('a fresh head has the package already');
        await client.uploadPackage(cold.uri, fs.readFileSync(cold.zipFile));
        add('upload: GET (404) + PUT to the dashboard on loopback', performance.now() - t);
        t = performance.now();
        if (!(await client.packageExists(cold.uri))) throw new Error('the package is not there after its upload');
        add('a second study: GET (200), nothing uploaded', performance.now() - t);
        const shipped = { project: '.', runtimeEnv: { working_dir: cold.uri } };
        // the plain job first: a head's first job also pays for Ray's own start (its job supervisor, the workers)
        const plain = await oneJob(path.join(root, `plain${r}`), client, {});
        const first = await oneJob(path.join(root, `first${r}`), client, shipped);
        const second = await oneJob(path.join(root, `second${r}`), client, shipped);
        add('job env, shipped, first on the node (download + unpack + driver)', first.envMs);
        add('job env, shipped, again on the node (unpacked already)', second.envMs);
        add('job env, project at its path (no working_dir)', plain.envMs);
        add('run (engine load + 2 steps), shipped, first job', first.runMs);
        add('run (engine load + 2 steps), shipped, second job', second.runMs);
        add('run (engine load + 2 steps), project at its path', plain.runMs);
        add("job wall (submit to Ray's SUCCEEDED), project at its path, the head's first job", plain.wallMs);
        add('job wall, shipped, first on the node', first.wallMs);
        add('job wall, shipped, again', second.wallMs);
        process.stderr.write(
          `repeat ${r + 1}/${repeats}: ${JSON.stringify({ cold: cold.packMs, first, second, plain })}\n`,
        );
      } finally {
        await head.stop();
      }
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
  console.log(
    `package: ${size}; ${repeats} repeats, ${os.availableParallelism()} cores, load ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}\n`,
  );
  console.log('| part | seconds, median (each repeat) |\n|---|---|');
  for (const [k, v] of Object.entries(rows)) console.log(`| ${k} | ${sec(median(v))} (${v.map(sec).join(', ')}) |`);
}

await main();
