/**
 * What `study` prints: each run's changes while the study goes (a line on stderr, or a JSON line on stdout), the
 * study's table at the end (run, variant, seed, status, steps, held-out score, then failures' reasons), and the one
 * UserError line when not every run finished. Names come from study records: shown through terminalText.
 */
import type { StudyRecord, StudyRun } from '../cluster/studies/studyRecord';
import { UserError } from '../base/userError';
import { terminalText as tt } from './terminalText';

/** Prints each run's changes (a line on stderr, or a JSON line on stdout). */
export function reporter(json: boolean | undefined) {
  return (run: StudyRun, study: StudyRecord) => {
    if (json) return void process.stdout.write(`${JSON.stringify({ type: 'run', study: study.id, ...run })}\n`);
    const i = study.runs.indexOf(run) + 1;
    const step = run.step !== undefined && run.totalSteps ? ` step ${run.step}/${run.totalSteps}` : '';
    const score =
      run.headline && run.headline.value !== null ? `, ${run.headline.label} ${run.headline.value.toFixed(3)}` : '';
    process.stderr.write(
      `[${i}/${study.runs.length}] ${tt(run.runId)}: ${run.state}${step}${score}${run.message && run.state !== 'running' ? ` (${tt(run.message)})` : ''}${run.fetch ? `; ${tt(run.fetch)}` : ''}\n`,
    );
  };
}

/** The table (or JSON), then one UserError line when not every run finished. */
export function finish(study: StudyRecord, json: boolean | undefined, rayFlag: string): void {
  if (json) console.log(JSON.stringify({ type: 'study', ...study }));
  else console.log(studyTable(study));
  const notDone = study.runs.filter((r) => r.state !== 'finished');
  const unfetched = study.runs.filter((r) => r.fetch?.startsWith('fetch failed')).length;
  if (notDone.length === 0 && unfetched > 0) {
    throw new UserError(
      `study ${study.id}: ${unfetched} run folder(s) not fetched back; retry with: mars-lab study status ${study.id} --follow${rayFlag}`,
    );
  }
  if (notDone.length === 0) return;
  const count = (s: StudyRun['state']) => notDone.filter((r) => r.state === s).length;
  const parts = (['failed', 'stopped', 'unknown', 'pending', 'submitted', 'running'] as const)
    .filter((s) => count(s) > 0)
    .map((s) => `${count(s)} ${s}`);
  const again = study.runs.some(
    (r) => r.state === 'unknown' || r.state === 'pending' || r.state === 'submitted' || r.state === 'running',
  );
  throw new UserError(
    `study ${study.id}: ${parts.join(', ')} of ${study.runs.length} runs${again ? `; re-attach later with: mars-lab study status ${study.id} --follow${rayFlag}` : ''}`,
  );
}

function fmtHeadline(run: StudyRun): string {
  const h = run.headline;
  if (!h) return '–';
  return h.value === null ? `– ${h.label}` : `${h.value.toFixed(3)} ${h.label}`;
}

/**
 * The study's table: run id, variant, seed (the real model, when a run names one), status, step, headline score (one
 * line each), then failures' reasons.
 */
export function studyTable(study: StudyRecord): string {
  const models = study.runs.some((r) => r.model !== undefined);
  const head = ['run', 'variant', 'seed', ...(models ? ['model'] : []), 'status', 'steps', 'held-out score'];
  const rows = study.runs.map((r) => [
    tt(r.runId),
    tt(r.variant ?? '–'),
    String(r.seed),
    ...(models ? [tt(r.model ?? '–')] : []),
    r.state + (r.jobStatus && study.where.kind === 'ray' ? ` (${r.jobStatus})` : ''),
    r.step === undefined ? '–' : `${r.step}${r.totalSteps ? `/${r.totalSteps}` : ''}`,
    fmtHeadline(r),
  ]);
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const lines = [head, ...rows].map((r) =>
    r
      .map((c, i) => c.padEnd(w[i]!))
      .join('  ')
      .trimEnd(),
  );
  for (const r of study.runs) if (r.message && r.state !== 'finished') lines.push(`  ${tt(r.runId)}: ${tt(r.message)}`);
  for (const r of study.runs) if (r.fetch && r.fetch !== 'fetched') lines.push(`  ${tt(r.runId)}: ${tt(r.fetch)}`);
  const where =
    study.where.kind === 'local'
      ? `here (${study.where.parallel} at once)`
      : `Ray at ${study.where.url} (runs in ${study.where.rayHome})`;
  return [`study ${tt(study.id)}: preset ${tt(study.preset)}, ${where}`, ...lines].join('\n');
}
