/**
 * Measures a study here and on a local Ray head (docs/results/ray.md): the same variants × seeds study run
 * sequentially here (--parallel 1), here as many at once as cores allow, and as Ray jobs on a fresh single-node head
 * (tests/ray/rayHead.ts, 2 CPUs, 1 per job), REPEATS times each (interleaved), with the median wall time; for the
 * Ray jobs, what each part cost: the submit request, the job's start (Ray's supervisor until "Runtime env is setting
 * up"), the runtime_env and driver launch (until the entrypoint's first command, which stamps the time), the run
 * itself (until the train process's done line) and the rest until Ray marks the job finished.
 *
 *   npx tsx tests/ray/studyBench.ts [--preset mars-ablations] [--variants full,sys1-off] [--seeds 3] [--steps 3] [--repeats 3]
 * Needs the venv of scripts/rayEnv.mjs.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RayJobsClient } from '../../engine/cluster/ray/jobsClient';
import { runStudyOnRay } from '../../engine/cluster/studies/rayStudy';
import { parseSeeds, parseVariants, planStudy, PROJECT_DIR } from '../../engine/cluster/studies/studyPlan';
import { studyLogFile } from '../../engine/cluster/studies/studyRecord';
import { CLI, rayMissing, startRayHead } from './rayHead';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : dflt;
}
const preset = arg('preset', 'mars-ablations');
const variantsSpec = arg('variants', 'full,sys1-off');
const seedsSpec = arg('seeds', '3');
const steps = Number(arg('steps', '3'));
const repeats = Number(arg('repeats', '3'));
const sets = [`budget.steps=${steps}`];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const sec = (ms: number) => (ms / 1000).toFixed(1);

async function studyHere(home: string, parallel: number): Promise<number> {
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [
      CLI,
      'study',
      '--preset',
      preset,
      '--variants',
      variantsSpec,
      '--seeds',
      seedsSpec,
      ...sets.flatMap((s) => ['--set', s]),
      '--parallel',
      String(parallel),
      '--home',
      home,
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((r) => child.on('close', r));
  if (code !== 0) throw new Error(`study here failed (${code}): ${err.slice(-500)}`);
  return performance.now() - t0;
}

interface JobParts {
  submitMs: number;
  startMs: number;
  waitMs: number;
  envMs: number;
  runMs: number;
  tailMs: number;
}

/** Epoch ms of a job's milestones: runtime env set-up logged, entrypoint started, done line, job end. */
interface Milestones {
  envAt: number;
  entryAt: number;
  endAt: number;
}

/**
 * How long each job waited for a free CPU after Ray logged its runtime env set-up (the head has `slots` CPUs, each job
 * takes 1). Jobs get a CPU in the order they started: each holds it from the moment it got it until it ended, so a job
 * got its CPU at the first moment, from its set-up on, when fewer than `slots` of the jobs served before it held one.
 */
function waitsForSlot(all: Milestones[], slots: number): number[] {
  const order = all.map((m, i) => ({ m, i })).sort((a, b) => a.m.entryAt - b.m.entryAt);
  const granted: { at: number; end: number }[] = [];
  const waits = new Array<number>(all.length).fill(0);
  for (const { m, i } of order) {
    const holding = (t: number) => granted.filter((g) => g.at <= t && t < g.end).length;
    const candidates = [m.envAt, ...granted.map((g) => g.end).filter((t) => t > m.envAt)].sort((a, b) => a - b);
    const at = Math.min(candidates.find((t) => holding(t) < slots) ?? m.envAt, m.entryAt);
    granted.push({ at, end: m.endAt });
    waits[i] = at - m.envAt;
  }
  return waits;
}

/** Log timestamps "2026-12-01 17:26:53,400" (the head's local time) as epoch ms. */
function logTime(line: string): number | null {
  const m = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d),(\d{3})/.exec(line);
  return m ? new Date(`${m[1]}T${m[2]}.${m[3]}`).getTime() : null;
}

async function studyOnRay(home: string, url: string): Promise<{ wallMs: number; jobs: JobParts[] }> {
  const client = new RayJobsClient({ url });
  const submitMs = new Map<string, number>();
  const submit = client.submit.bind(client);
  client.submit = async (req) => {
    const t = performance.now();
    const id = await submit(req);
    submitMs.set(id, performance.now() - t);
    return id;
  };
  const t0 = performance.now();
  const record = planStudy({
    preset,
    variants: parseVariants(variantsSpec),
    seeds: parseSeeds(seedsSpec),
    sets,
    where: { kind: 'ray', url, rayHome: home, project: PROJECT_DIR, node: process.execPath, cpusPerJob: 1 },
  });
  const done = await runStudyOnRay(home, record, client, { setup: 'echo "bench: entrypoint at $(date +%s%3N)"' }).done;
  const wallMs = performance.now() - t0;
  const jobs: JobParts[] = [];
  const marks: Milestones[] = [];
  for (const run of done.runs) {
    if (run.state !== 'finished') throw new Error(`run ${run.runId} ${run.state}: ${run.message}`);
    const job = await client.job(run.runId);
    const log = fs.readFileSync(studyLogFile(home, done.id, run.runId), 'utf8').split('\n');
    const envAt = logTime(log.find((l) => l.includes('Runtime env is setting up'))!)!;
    const entryAt = Number(/bench: entrypoint at (\d+)/.exec(log.join('\n'))![1]);
    const doneLine = JSON.parse(log.find((l) => l.startsWith('{"type":"done"'))!);
    const doneAt = doneLine.metrics.time * 1000; // the last step's time (train's own clock, the same machine)
    marks.push({ envAt, entryAt, endAt: job.end_time! });
    jobs.push({
      submitMs: submitMs.get(run.runId) ?? NaN,
      startMs: envAt - job.start_time!,
      waitMs: 0,
      envMs: entryAt - envAt,
      runMs: doneAt - entryAt,
      tailMs: job.end_time! - doneAt,
    });
  }
  waitsForSlot(marks, 2).forEach((w, i) => {
    jobs[i]!.waitMs = w;
    jobs[i]!.envMs -= w;
  });
  process.stderr.write(`${JSON.stringify(marks)}\n`);
  return { wallMs, jobs };
}

async function main() {
  const missing = rayMissing();
  if (missing) throw new Error(missing);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-raybench-'));
  const t0 = performance.now();
  const head = await startRayHead();
  const onSignal = () => void head.stop().then(() => process.exit(130));
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  const headStartMs = performance.now() - t0;
  const walls: Record<string, number[]> = { sequential: [], here: [], ray: [] };
  const jobs: JobParts[] = [];
  try {
    for (let r = 0; r < repeats; r++) {
      walls.sequential!.push(await studyHere(path.join(root, `seq${r}`), 1));
      walls.here!.push(await studyHere(path.join(root, `here${r}`), Math.max(1, os.availableParallelism())));
      const ray = await studyOnRay(path.join(root, `ray${r}`), head.url);
      walls.ray!.push(ray.wallMs);
      jobs.push(...ray.jobs);
      process.stderr.write(`${JSON.stringify(ray.jobs)}\n`);
      process.stderr.write(
        `repeat ${r + 1}/${repeats}: sequential ${sec(walls.sequential!.at(-1)!)} s, here ${sec(walls.here!.at(-1)!)} s, ray ${sec(ray.wallMs)} s\n`,
      );
    }
  } finally {
    const t1 = performance.now();
    await head.stop();
    process.stderr.write(`head: up in ${sec(headStartMs)} s, stopped in ${sec(performance.now() - t1)} s\n`);
    fs.rmSync(root, { recursive: true, force: true });
  }
  const runs = parseVariants(variantsSpec).length * parseSeeds(seedsSpec).length;
  console.log(
    `study: ${preset} --variants ${variantsSpec} --seeds ${seedsSpec} --set ${sets.join(' --set ')} (${runs} runs), ${repeats} repeats, ${os.availableParallelism()} cores, load ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  console.log(`head start ${sec(headStartMs)} s\n`);
  console.log('| where | wall time, median (all) |\n|---|---|');
  const label: Record<string, string> = {
    sequential: 'here, one at a time (--parallel 1)',
    here: `here, ${os.availableParallelism()} at once (default)`,
    ray: 'local Ray head, 2 CPUs, 1 per job (--ray)',
  };
  for (const [k, v] of Object.entries(walls)) {
    console.log(`| ${label[k]} | ${sec(median(v))} s (${v.map(sec).join(', ')}) |`);
  }
  console.log(`\nper Ray job, median over ${jobs.length} jobs (min–max):\n\n| part | seconds |\n|---|---|`);
  const parts: [keyof JobParts, string][] = [
    ['submitMs', 'submit request (POST /api/jobs/)'],
    ['startMs', 'job start: Ray\'s supervisor actor, until "Runtime env is setting up"'],
    ['waitMs', `waiting for a free CPU (2 CPUs, ${runs} jobs a study)`],
    ['envMs', 'runtime_env set-up and driver launch, until the entrypoint runs'],
    ['runMs', 'the run itself: node + engine load + training, until its done line'],
    ['tailMs', 'final checkpoint, process exit, until Ray marks the job SUCCEEDED'],
  ];
  for (const [k, name] of parts) {
    const xs = jobs.map((j) => j[k]);
    console.log(`| ${name} | ${sec(median(xs))} (${sec(Math.min(...xs))}–${sec(Math.max(...xs))}) |`);
  }
}

await main();
