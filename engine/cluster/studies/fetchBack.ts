/**
 * Fetches a finished run's folder back from a Ray cluster whose home this machine cannot read. The Jobs API has no
 * file download, so a small follow-up job (submission id `<runId>-fetch`, then `-fetch-2`, … on retries) packs
 * `<ray-home>/runs/<runId>` with the cluster's own `tar` (all checkpoints but the last left out unless --fetch-all)
 * and prints it base64 between marker lines, followed by its size and sha256; this side reads the job's full log,
 * decodes and verifies it, and unpacks it with the system `tar` into a temp folder next to the study's logs, then
 * renames it to `<home>/runs/<runId>` (never over an existing folder). Every fault is one line in the run's `fetch`
 * field (`fetch failed: …`), and nothing else in the record changes; `study status ID --follow` tries again.
 */
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { RayError, type RayJobsClient } from '../ray/jobsClient';
import { runsDir } from '../../runs/folder/home';
import { studiesDir, type StudyRecord, type StudyRun } from './studyRecord';
import { shellQuote } from './studyPlan';

/** The most log a fetch may produce (base64 is 4/3 of the archive, so the archive may be up to 3/4 of this). */
export const FETCH_LOG_CAP = 256 * 2 ** 20;
export const FETCH_ARCHIVE_CAP = Math.floor((FETCH_LOG_CAP / 4) * 3);

const BEGIN = 'MARS_LAB_FETCH_BEGIN';
const END = 'MARS_LAB_FETCH_END';
const TOO_LARGE = 'MARS_LAB_FETCH_TOO_LARGE';
const NO_RUN = 'MARS_LAB_FETCH_NO_RUN';

/** A fetch fault, in one line (without the `fetch failed: ` prefix). */
export class FetchError extends Error {}

const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;

/** The fetch job's shell entrypoint (Ray runs it with /bin/sh): pack, check the cap, print between the markers. */
export function fetchEntrypoint(rayHome: string, runId: string, all: boolean, cap = FETCH_ARCHIVE_CAP): string {
  const d = shellQuote(path.posix.join(rayHome, 'runs'));
  const r = shellQuote(runId);
  const excludes = all
    ? ''
    : // every checkpoints/<name> but the highest numbered one (leftover .tmp-/.old- folders included)
      `last=$(ls "$d/$r/checkpoints" 2>/dev/null | grep -E '^[0-9]+$' | sort -n | tail -n 1); ` +
      `for c in $(ls "$d/$r/checkpoints" 2>/dev/null); do [ "$c" = "$last" ] || set -- "$@" "--exclude=$r/checkpoints/$c"; done; `;
  return [
    `d=${d}; r=${r}; set --; `,
    `if [ ! -f "$d/$r/run.json" ]; then echo "${NO_RUN} $d/$r"; exit 3; fi; `,
    excludes,
    `f=$(mktemp) || exit 5; trap 'rm -f "$f"' EXIT; `,
    `tar czf "$f" -C "$d" "$@" "$r" || exit 5; `,
    `n=$(wc -c < "$f"); `,
    `if [ "$n" -gt ${cap} ]; then echo "${TOO_LARGE} $n ${cap}"; exit 4; fi; `,
    `s=$(sha256sum "$f" | cut -d ' ' -f 1); `,
    `echo "${BEGIN} $r"; base64 -w 0 "$f"; echo; echo "${END} $n $s"`,
  ].join('');
}

/** The archive out of a fetch job's log, checked against the size and sha256 the job printed; a FetchError if not. */
export function decodeFetchLog(log: string, runId: string, opts: { rayHome?: string; all?: boolean } = {}): Buffer {
  if (log.length > FETCH_LOG_CAP) {
    throw new FetchError(`the fetch job's log is ${mib(log.length)}, over the ${mib(FETCH_LOG_CAP)} cap`);
  }
  const lines = log.split('\n').map((l) => l.replace(/\r$/, ''));
  const noRun = lines.find((l) => l.startsWith(`${NO_RUN} `));
  if (noRun) throw new FetchError(`the cluster has no run folder ${noRun.slice(NO_RUN.length + 1)}`);
  const tooLarge = lines.find((l) => l.startsWith(`${TOO_LARGE} `));
  if (tooLarge) {
    const [n, cap] = tooLarge.split(' ').slice(1).map(Number);
    throw new FetchError(
      `the run folder packs to ${mib(n ?? 0)}, over the ${mib(cap ?? FETCH_ARCHIVE_CAP)} fetch cap (${mib(FETCH_LOG_CAP)} of log)` +
        `${opts.all ? '; fetch without --fetch-all (only the last checkpoint)' : ''}, or copy ${opts.rayHome ? path.posix.join(opts.rayHome, 'runs', runId) : 'it'} from the cluster by hand`,
    );
  }
  const b = lines.findIndex((l) => l === `${BEGIN} ${runId}`);
  const e = lines.findIndex((l, i) => i > b && l.startsWith(`${END} `));
  if (b < 0 || e < 0) {
    throw new FetchError(
      `the fetch job's log has no ${b < 0 ? BEGIN : END} line (does the cluster have sh, tar, base64 and sha256sum?)`,
    );
  }
  const m = /^(\d+) ([0-9a-f]{64})$/.exec(lines[e]!.slice(END.length + 1));
  if (!m) throw new FetchError(`the fetch job's ${END} line is not "<size> <sha256>"`);
  const data = Buffer.from(lines.slice(b + 1, e).join(''), 'base64');
  if (data.length !== Number(m[1])) {
    throw new FetchError(`the archive decodes to ${data.length} bytes, but the job packed ${m[1]} (a damaged log)`);
  }
  const sha = createHash('sha256').update(data).digest('hex');
  if (sha !== m[2]) {
    throw new FetchError(`the archive's sha256 ${sha.slice(0, 12)}… is not the job's ${m[2]!.slice(0, 12)}…`);
  }
  return data;
}

/**
 * Unpacks a fetched archive (one top folder, `<runId>`) into `<home>/runs/<runId>` by way of a temp folder in the
 * study's log folder (same file system, so the rename is atomic). Returns the run folder; a FetchError if the
 * archive is not one run folder or tar fails. The caller checks first that no folder of that id exists.
 */
export function unpackRun(home: string, studyId: string, runId: string, archive: Buffer): string {
  const dest = path.join(runsDir(home), runId);
  const tmp = path.join(studiesDir(home), studyId, `.fetch-${runId}-${process.pid}`);
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { recursive: true });
  try {
    const r = spawnSync('tar', ['xzf', '-', '-C', tmp, '--no-same-owner', '--no-same-permissions'], {
      input: archive,
      encoding: 'utf8',
      maxBuffer: 1 << 20,
    });
    if (r.error || r.status !== 0) {
      const why = r.error ? r.error.message : (r.stderr.trim().split('\n')[0] ?? `exit ${r.status}`);
      throw new FetchError(`tar could not unpack the archive here (${why})`);
    }
    const top = fs.readdirSync(tmp);
    const folder = path.join(tmp, runId);
    if (top.length !== 1 || top[0] !== runId || !fs.existsSync(path.join(folder, 'run.json'))) {
      throw new FetchError(
        `the archive is not the run folder ${runId} (it holds ${top.slice(0, 3).join(', ') || 'nothing'})`,
      );
    }
    fs.mkdirSync(runsDir(home), { recursive: true });
    fs.renameSync(folder, dest);
    return dest;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** Whether a run of this study should be fetched (now or on a retry). */
export function wantsFetch(study: StudyRecord, run: StudyRun): boolean {
  return (
    study.where.kind === 'ray' &&
    study.where.fetch !== undefined &&
    (run.state === 'finished' || run.state === 'stopped') &&
    (run.fetch === undefined || run.fetch.startsWith('fetch failed'))
  );
}

const JOB_FINAL = new Set(['SUCCEEDED', 'FAILED', 'STOPPED']);

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
}

/**
 * Fetches one run's folder; sets `run.fetch` to 'fetched', 'kept: …' (a folder of that id is here already) or
 * 'fetch failed: …'. Never throws for a fault of the fetch; returns without a change when aborted.
 */
export async function fetchRun(
  home: string,
  study: StudyRecord,
  run: StudyRun,
  client: RayJobsClient,
  opts: { signal?: AbortSignal; pollMs?: number } = {},
): Promise<void> {
  if (study.where.kind !== 'ray') return;
  const { rayHome } = study.where;
  const all = study.where.fetch === 'all';
  const dest = path.join(runsDir(home), run.runId);
  if (fs.existsSync(dest)) {
    run.fetch = `kept: ${dest} exists here already, not overwritten (move it away and run study status --follow to fetch)`;
    return;
  }
  try {
    // a new submission id each attempt (a retry after a fault); one that exists already is skipped
    let id = '';
    for (let tries = 0; ; tries++) {
      run.fetchAttempts = (run.fetchAttempts ?? 0) + 1;
      id = run.fetchAttempts === 1 ? `${run.runId}-fetch` : `${run.runId}-fetch-${run.fetchAttempts}`;
      try {
        await client.submit({
          entrypoint: fetchEntrypoint(rayHome, run.runId, all),
          submission_id: id,
          metadata: { mars_lab_study: study.id, mars_lab_fetch: run.runId },
        });
        break;
      } catch (err) {
        if (!(err instanceof RayError) || err.kind !== 'duplicate' || tries >= 20) throw err;
      }
    }
    let job = await client.job(id);
    while (!JOB_FINAL.has(job.status)) {
      await sleep(opts.pollMs ?? 1000, opts.signal);
      if (opts.signal?.aborted) return;
      job = await client.job(id);
    }
    const log = await client.logs(id);
    if (job.status !== 'SUCCEEDED') {
      decodeFetchLog(log, run.runId, { rayHome, all }); // its own line when the job said why (too large, no folder)
      throw new FetchError(
        `the fetch job ${id} ended ${job.status}${job.message ? ` (${job.message.split('\n')[0]})` : ''}`,
      );
    }
    const archive = decodeFetchLog(log, run.runId, { rayHome, all });
    if (fs.existsSync(dest)) {
      run.fetch = `kept: ${dest} exists here already, not overwritten`;
      return;
    }
    unpackRun(home, study.id, run.runId, archive);
    run.fetch = 'fetched';
  } catch (err) {
    // a FetchError, a RayError (unreachable, …) or a file system error here: one line, nothing else changed
    const line = (err instanceof Error ? err.message : String(err)).split('\n')[0]!;
    run.fetch = `fetch failed: ${line}; retry with: mars-lab study status ${study.id} --follow`;
  }
}
