/**
 * `export RUN --to verl|marti --submit --ray URL`: the launch script's command sent to a Ray cluster through the Ray
 * Jobs API (engine/cluster/ray/jobsClient.ts), without the `ray` CLI. The launch variables (MODEL, TRAIN_FILES or
 * PROMPT_DATA, OUT_DIR, MARTI_DIR) come from the environment as the script takes them, --model giving MODEL; paths are
 * the cluster's, so OUT_DIR and MARTI_DIR must be absolute. The job's submission id is SUBMISSION_ID or
 * mars-lab-<run id> (Ray refuses an id it has seen: one line says so).
 */
import type { RayJobsClient } from '../../cluster/ray/jobsClient';
import type { RaySubmitRequest } from '../../cluster/ray/jobsSchemas';
import { UserError } from '../../base/userError';
import type { CommandWord, ExportContext, ExportPlan } from './plan';
import { shQuote } from './shell';

/** The launch variables' values: the environment's, else their defaults; a missing or relative one is a UserError. */
export function launchValues(plan: ExportPlan, env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of plan.command.vars) {
    const value = env[v.name]?.trim() || v.default || (v.defaultFrom ? out[v.defaultFrom] : undefined);
    if (!value) throw new UserError(`export --submit: set ${v.name}: ${v.required ?? 'it has no default'}`);
    if (v.absolute && !value.startsWith('/')) {
      throw new UserError(
        `export --submit: ${v.name}=${value} is not an absolute path: give the path on the cluster (${v.required ?? ''})`,
      );
    }
    out[v.name] = value;
  }
  return out;
}

/** A word with its `$NAME` (shell) or `@NAME@` (JSON-escaped) references filled in. */
function fill(word: CommandWord, values: Record<string, string>): string {
  if (word.expand === 'shell') {
    return word.text.replace(/\$\{?([A-Z_][A-Z0-9_]*)\}?/g, (all, name: string) => values[name] ?? all);
  }
  if (word.expand === 'json') {
    return word.text.replace(/@([A-Z_][A-Z0-9_]*)@/g, (all, name: string) =>
      values[name] === undefined ? all : JSON.stringify(values[name]).slice(1, -1),
    );
  }
  return word.text;
}

function fillDeep(value: unknown, values: Record<string, string>): unknown {
  if (typeof value === 'string') return fill({ text: value, expand: 'shell' }, values);
  if (Array.isArray(value)) return value.map((v) => fillDeep(v, values));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillDeep(v, values)]));
  }
  return value;
}

/** The Jobs API request: entrypoint (each word shell-quoted), runtime_env, submission id and metadata. */
export function submissionOf(plan: ExportPlan, ctx: ExportContext, env: NodeJS.ProcessEnv): RaySubmitRequest {
  const values = launchValues(plan, env);
  const quote = (w: CommandWord) => (w.text === '&&' && w.expand === undefined ? '&&' : shQuote(fill(w, values)));
  const entrypoint = [
    ...plan.command.before.map(quote),
    'python3',
    '-m',
    plan.command.module,
    ...plan.command.words.map(quote),
  ].join(' ');
  const runtimeEnv = fillDeep(plan.command.runtimeEnv, values) as Record<string, unknown>;
  return {
    entrypoint,
    submission_id: env['SUBMISSION_ID']?.trim() || `mars-lab-${ctx.runId}`,
    ...(Object.keys(runtimeEnv).length ? { runtime_env: runtimeEnv } : {}),
    metadata: { mars_lab_run: ctx.runId, mars_lab_export: plan.target, mars_lab_out_dir: values['OUT_DIR']! },
  };
}

/** Submits; returns the submission id. */
export async function submitExport(
  plan: ExportPlan,
  ctx: ExportContext,
  client: RayJobsClient,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ submissionId: string; request: RaySubmitRequest }> {
  const request = submissionOf(plan, ctx, env);
  const submissionId = await client.submit(request);
  return { submissionId, request };
}
