/**
 * `export RUN --to verl|marti` (issue 18 part 3): reads the run's config from run.json, builds the target's plan
 * (verl.ts, marti.ts) and writes it to the output folder: the launch script (executable), the target's config files,
 * mapping.txt (both tables) and export.json (the same, for tools).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseRunConfig } from '../../runs/config/configSchema';
import { readRunMeta } from '../../runs/folder/runFolder';
import { UserError } from '../../base/userError';
import { martiPlan, requireMarti } from './marti';
import { planTables, type ExportContext, type ExportPlan } from './plan';
import { verlPlan } from './verl';

export const EXPORT_TARGETS = ['verl', 'marti'] as const;
export type ExportTarget = (typeof EXPORT_TARGETS)[number];

export interface ExportOptions {
  to: ExportTarget;
  /** The output folder (default: ./<target>-<runId>). */
  out?: string;
  model?: string;
  nnodes?: number;
  gpusPerNode?: number;
}

/** The plan for a run folder, without writing anything. */
export function planExport(runDir: string, opts: ExportOptions): ExportPlan {
  const meta = readRunMeta(runDir);
  if ((meta as { imported?: unknown }).imported !== undefined || meta.config === null) {
    throw new UserError(
      `export --to ${opts.to}: run ${meta.id} was imported from another trainer: it has no mars-lab config to export`,
    );
  }
  const config = parseRunConfig(meta.config, `${path.join(runDir, 'run.json')} config`);
  if (opts.model !== undefined && opts.model.trim() === '') {
    throw new UserError('export: --model is empty: give a Hugging Face model id or a model folder');
  }
  const ctx: ExportContext = {
    runId: meta.id,
    algorithm: config.algorithm,
    preset: meta.preset,
    model: opts.model,
    nnodes: opts.nnodes ?? 1,
    gpusPerNode: opts.gpusPerNode ?? 8,
  };
  if (opts.to === 'verl') return verlPlan(config, ctx);
  requireMarti(config, meta.id);
  return martiPlan(config as Extract<typeof config, { algorithm: 'marti' }>, ctx);
}

/** Writes the plan's files to the output folder; returns the folder, the files and the tables. */
export function exportRun(
  runDir: string,
  opts: ExportOptions,
): { out: string; files: string[]; tables: string; plan: ExportPlan } {
  const plan = planExport(runDir, opts);
  const meta = readRunMeta(runDir);
  const out = path.resolve(opts.out ?? `${opts.to}-${meta.id}`);
  if (fs.existsSync(out) && !fs.statSync(out).isDirectory()) {
    throw new UserError(`export: --out ${out} is a file: give a folder`);
  }
  fs.mkdirSync(out, { recursive: true });
  const tables = planTables(plan);
  const files = {
    ...plan.files,
    'mapping.txt': tables,
    'export.json':
      JSON.stringify({ target: plan.target, run: meta.id, mapped: plan.mapped, unmapped: plan.unmapped }, null, 2) +
      '\n',
  };
  for (const [name, text] of Object.entries(files)) {
    const file = path.join(out, name);
    fs.writeFileSync(file, text, { mode: name.endsWith('.sh') ? 0o755 : 0o644 });
    if (name.endsWith('.sh')) fs.chmodSync(file, 0o755);
  }
  return { out, files: Object.keys(files), tables, plan };
}
