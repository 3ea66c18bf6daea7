/**
 * Presets: named, described run configs in resources/presets/<name>.json that a newcomer can launch without writing
 * any. A preset holds a partial config (the schema's defaults fill the rest) and honest expected runtimes.
 *
 * Launch configs are resolved here too (preset or config file, then `--set` overrides), so that every error names the
 * place the bad value came from: the preset, the file, or the `--set` flag that wrote it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../base/projectRoot';
import { z } from 'zod';
import { applySets, parseAssignment } from '../config/configOverrides';
import {
  checkRunConfig,
  checkWith,
  ConfigValidationError,
  type ConfigIssue,
  type RunConfig,
  type RunConfigInput,
} from '../config/configSchema';
import { UserError } from '../../base/userError';
import { jsonParseProblem } from '../../base/boundedText';
import { openRegularFile, readOpenFile } from '../../base/regularFile';

/** resources/presets, found from this file so that it resolves the same from the CLI, tests and tsx. */
export const PRESETS_DIR = path.join(PROJECT_ROOT, 'resources', 'presets');

const PRESET_NAME = /^[a-z0-9][a-z0-9-]*$/;

/**
 * What the description promises, in a form that can be checked (engine/runs/presets/presetCheck.ts): the run's last evaluation
 * of `metric` is at least `atLeast` at every one of `seeds`.
 */
const successSchema = z.strictObject({
  metric: z.string().regex(/^eval\./, { error: 'an evaluation metric, e.g. eval.accuracy' }),
  atLeast: z.number(),
  seeds: z.array(z.int().min(0)).min(1, { error: 'at least one seed' }),
});

export const presetFileSchema = z.strictObject({
  name: z.string().regex(PRESET_NAME, { error: 'lower-case letters, digits and dashes, as in the file name' }),
  description: z.string().trim().min(1),
  expectedRuntime: z.strictObject({
    /** Wall-clock seconds for the whole run; null until someone has measured it. */
    cpuSeconds: z.number().gt(0).nullable(),
    gpuSeconds: z.number().gt(0).nullable(),
    /** The machine and backend the figures come from, or why there are none. */
    measuredOn: z.string().trim().min(1),
  }),
  // Checked separately against the run config schema, so its issues get that schema's own paths and messages.
  config: z.record(z.string(), z.unknown()),
  /** Named variations of `config` (an ablation grid): each is a list of `--set` overrides, launched with `--variant`. */
  variants: z
    .record(z.string().regex(PRESET_NAME, { error: 'lower-case letters, digits and dashes' }), z.array(z.string()))
    .optional(),
  success: successSchema.optional(),
  /** The preset a newcomer should run first: listed first, in the app and by `mars-lab presets`. */
  recommended: z.boolean().optional(),
  /** Sized for a GPU (on a CPU a step takes minutes): marked so in the app and by `mars-lab presets`. */
  gpuOnly: z.boolean().optional(),
});

export interface Preset {
  name: string;
  description: string;
  expectedRuntime: { cpuSeconds: number | null; gpuSeconds: number | null; measuredOn: string };
  /** As written in the file (validated): fields left out take the schema's defaults. */
  config: RunConfigInput;
  /** Named `--set` lists over `config` (validated), e.g. the switches of an ablation grid. */
  variants?: Record<string, string[]>;
  /** The checkable promise, when the preset makes one. */
  success?: z.infer<typeof successSchema>;
  recommended?: boolean;
  gpuOnly?: boolean;
  file: string;
}

export class UnknownPresetError extends UserError {}

/** A preset or config file is a few KB; the bound is far above that and far below what fills memory. */
const MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024;

function readJson(file: string, what: string): unknown {
  // Without blocking (a FIFO) or reading without end (/dev/zero): regularFile.ts refuses both before any read.
  let text: string;
  let opened: ReturnType<typeof openRegularFile>;
  try {
    opened = openRegularFile(file);
  } catch (err) {
    throw new UserError(`${file}: cannot read ${what} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if ('missing' in opened) throw new UserError(`${file}: cannot read ${what} (no such file)`);
  if ('kind' in opened) throw new UserError(`${file}: ${what} is ${opened.kind}, not a regular file; give a JSON file`);
  try {
    text = readOpenFile(opened.fd, MAX_CONFIG_FILE_BYTES, `${file}: ${what}`).toString('utf8');
  } finally {
    fs.closeSync(opened.fd);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    // never the parser's own message: it quotes the file's first bytes
    throw new UserError(`${file}: ${what} is not valid JSON (${jsonParseProblem(err)})`);
  }
}

/** Reads and validates one preset file; every problem is reported with the file's name. */
export function readPresetFile(file: string): Preset {
  const raw = readJson(file, 'the preset');
  const checked = checkWith(presetFileSchema, raw);
  if (!checked.success) throw new ConfigValidationError(checked.issues, file);
  const p = checked.data;
  const issues: ConfigIssue[] = [];
  const stem = path.basename(file, '.json');
  if (p.name !== stem) {
    issues.push({
      path: 'name',
      message: `must equal the file name "${stem}" (presets are looked up by file name) — received ${JSON.stringify(p.name)}`,
    });
  }
  const config = checkRunConfig(p.config);
  if (!config.success) {
    issues.push(...config.issues.map((i) => ({ path: i.path ? `config.${i.path}` : 'config', message: i.message })));
  }
  for (const [name, sets] of Object.entries(p.variants ?? {})) {
    try {
      resolveWithSets(p.config, sets, `variant '${name}'`);
    } catch (err) {
      issues.push({ path: `variants.${name}`, message: (err as Error).message });
    }
  }
  if (issues.length) throw new ConfigValidationError(issues, file);
  return { ...p, config: p.config as RunConfigInput, file };
}

function presetFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) throw new UserError(`no presets folder at ${dir}`);
  return (
    fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      // by name, not file name: "marti-homo" before "marti-homo-small" ('.' sorts after '-')
      .sort((a, b) => (a.slice(0, -5) < b.slice(0, -5) ? -1 : 1))
  );
}

/** Every preset in `dir`: the recommended first, then by name. */
export function listPresets(dir: string = PRESETS_DIR): Preset[] {
  const presets = presetFiles(dir).map((f) => readPresetFile(path.join(dir, f)));
  return [...presets.filter((p) => p.recommended), ...presets.filter((p) => !p.recommended)];
}

export function loadPreset(name: string, dir: string = PRESETS_DIR): Preset {
  const names = presetFiles(dir).map((f) => f.slice(0, -'.json'.length));
  // Only names from the listing are opened, so a name like '../x' can never reach another file.
  if (!names.includes(name)) {
    throw new UnknownPresetError(`unknown preset '${name}'; available: ${names.join(', ') || '(none)'}`);
  }
  return readPresetFile(path.join(dir, `${name}.json`));
}

/** Whether field path `a` lies within `b` or `b` within `a`. */
function overlaps(a: string, b: string): boolean {
  return a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`);
}

/** Applies the `--set`s to `raw` and validates; each issue names the `--set` that wrote its field, or else `source`. */
function resolveWithSets(raw: object, sets: readonly string[], source: string): RunConfig {
  const withSets = applySets(raw, sets);
  const checked = checkRunConfig(withSets);
  if (checked.success) return checked.data;
  const setPaths = sets.map((s) => ({ flag: `--set ${s}`, path: parseAssignment(s).path.join('.') }));
  const sourceOf = (issuePath: string): string => {
    const from = setPaths.filter((s) => issuePath !== '' && overlaps(issuePath, s.path)).pop();
    return from ? from.flag : source;
  };
  throw new ConfigValidationError(checked.issues, sourceOf);
}

/** The preset's config (with one of its variants' overrides first, if named) with the `--set` overrides applied,
 * validated, defaults filled in. */
export function resolvePresetConfig(
  name: string,
  sets: readonly string[] = [],
  dir: string = PRESETS_DIR,
  variant?: string,
): RunConfig {
  const preset = loadPreset(name, dir);
  if (variant === undefined) return resolveWithSets(preset.config, sets, `preset '${name}'`);
  const variants = preset.variants ?? {};
  if (!(variant in variants)) {
    throw new UserError(
      `--variant ${variant}: preset '${name}' has ${Object.keys(variants).length ? `the variants ${Object.keys(variants).join(', ')}` : 'no variants'}`,
    );
  }
  return resolveWithSets(preset.config, [...variants[variant]!, ...sets], `preset '${name}' variant '${variant}'`);
}

/** A config file (JSON, possibly partial) with the `--set` overrides applied, validated, defaults filled in. */
export function resolveConfigFile(file: string, sets: readonly string[] = []): RunConfig {
  const raw = readJson(file, 'the config');
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new UserError(
      `${file}: expected a JSON object with an "algorithm" field, got ${Array.isArray(raw) ? 'a list' : raw === null ? 'null' : `a ${typeof raw}`}`,
    );
  }
  return resolveWithSets(raw, sets, file);
}
