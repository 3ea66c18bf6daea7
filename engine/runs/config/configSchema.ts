/**
 * The run configuration: a discriminated union on `algorithm` of each algorithm's member (shared sections from
 * engine/training/configSections.ts plus its own), its TypeScript types, and validation whose messages name the field,
 * what it accepts and what it got. configJsonSchema.ts turns it into the JSON Schema the launch form is drawn from.
 */
import { z } from 'zod';
import { marsConfigSchema } from '../../mars/configSchema';
import { martiConfigSchema } from '../../marti/configSchema';
import { seqgrpoConfigSchema } from '../../seqgrpo/configSchema';
import { chatgrpoConfigSchema } from '../../chatgrpo/configSchema';
import { martipyConfigSchema } from '../../marti/python/trainConfig';
import { UserError } from '../../base/userError';
import { boundedJson, clip, configSizeProblem } from '../../base/boundedText';
import { memoryProblem } from '../../training/memoryBudget';
import {
  budgetSchema,
  checkpointSchema,
  evalSchema,
  modelSchema,
  modelSourceSchema,
  pretrainSchema,
  rlSchema,
  samplerSchema,
  scheduleSchema,
} from '../../training/configSections';

export * from '../../training/configSections';
export {
  seqgrpoConfigSchema,
  seqgrpoTaskSchema,
  type SeqGrpoConfig,
  type SeqGrpoTaskConfig,
} from '../../seqgrpo/configSchema';
export { marsConfigSchema, type MarsConfig } from '../../mars/configSchema';
export { martiConfigSchema, type MartiConfig } from '../../marti/configSchema';
export { chatgrpoConfigSchema, type ChatGrpoConfig } from '../../chatgrpo/configSchema';
export { martipyConfigSchema, type MartipyConfig } from '../../marti/python/trainConfig';

// ---- the union --------------------------------------------------------------------------------------------------------

export const runConfigSchema = z
  .discriminatedUnion('algorithm', [
    seqgrpoConfigSchema,
    marsConfigSchema,
    martiConfigSchema,
    chatgrpoConfigSchema,
    martipyConfigSchema,
  ])
  .superRefine((config, ctx) => {
    // Memory is checked before it is spent (memoryBudget.ts): a config this machine cannot hold is refused here, where
    // train, resume, pretrain and the app's launch all validate, instead of a worker allocating until it is killed.
    const problem = memoryProblem(config);
    if (problem) {
      ctx.addIssue({
        code: 'custom',
        path: problem.path.split('.'),
        message: problem.message,
        params: { whole: true },
      });
    }
  })
  .meta({
    title: 'mars-lab run configuration',
    description: 'Everything a training run needs; fields left out take their defaults.',
  });

export type RunConfig = z.output<typeof runConfigSchema>;
/** What a config file, a preset or the form may give: every field with a default is optional. */
export type RunConfigInput = z.input<typeof runConfigSchema>;
export type Algorithm = RunConfig['algorithm'];
export type ModelSectionConfig = z.output<typeof modelSchema>;
export type ModelSource = z.output<typeof modelSourceSchema>;
export type SamplerConfig = z.output<typeof samplerSchema>;
export type RlConfig = z.output<typeof rlSchema>;
export type LrScheduleConfig = z.output<typeof scheduleSchema>;
export type BudgetConfig = z.output<typeof budgetSchema>;
export type PretrainConfig = z.output<typeof pretrainSchema>;
export type EvalConfig = z.output<typeof evalSchema>;
export type CheckpointConfig = z.output<typeof checkpointSchema>;

// ---- validation with messages a user can act on ------------------------------------------------------------------------

export interface ConfigIssue {
  /** Dotted field path, as `--set` takes it (`rl.lr`, `tags.1`); '' for the whole config. */
  path: string;
  /** What was expected and what was received, without the source and path (for inline display next to the field). */
  message: string;
}

export class ConfigValidationError extends UserError {
  readonly issues: ConfigIssue[];

  /** `source` names where the config came from; a function can name a different source per field path. */
  constructor(issues: ConfigIssue[], source: string | ((path: string) => string)) {
    const sourceOf = typeof source === 'string' ? () => source : source;
    super(issues.map((i) => `${sourceOf(i.path)}: ${i.path ? `${i.path}: ` : ''}${i.message}`).join('\n'));
    this.issues = issues;
  }
}

/** Marks messages zod made up itself, so that a message given in the schema (a reason) can be told apart. */
const DEFAULT_MESSAGE = '\u0000default';

const TYPE_NAMES: Record<string, string> = {
  object: 'an object',
  array: 'a list',
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  null: 'null',
};

/** A bounded prefix of a value's JSON: the value may be megabytes a request sent. */
function jsonOf(value: unknown, max = 80): string {
  return boundedJson(value, max);
}

function oneOf(values: readonly unknown[]): string {
  return values.length === 1
    ? `expected ${jsonOf(values[0])}`
    : `expected one of ${values.map((v) => jsonOf(v)).join(' | ')}`;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const key of path) {
    if (typeof v !== 'object' || v === null || typeof key === 'symbol') return undefined;
    v = (v as Record<string | number, unknown>)[key];
  }
  return v;
}

function stripWrappers(s: z.ZodType): z.ZodType {
  while (
    s instanceof z.ZodDefault ||
    s instanceof z.ZodPrefault ||
    s instanceof z.ZodOptional ||
    s instanceof z.ZodNullable
  ) {
    s = s.unwrap() as z.ZodType;
  }
  return s;
}

/** The schema that applies at `path` of `input`, following discriminated unions by the input's tag. */
function schemaAt(schema: z.ZodType, input: unknown, path: readonly PropertyKey[]): z.ZodType | undefined {
  let s = stripWrappers(schema);
  if (s instanceof z.ZodUnion) {
    const tag = s instanceof z.ZodDiscriminatedUnion ? s.def.discriminator : undefined;
    const tagValue = tag === undefined ? undefined : valueAt(input, [tag]);
    const options = (s.options as readonly z.ZodType[]).map(stripWrappers);
    const chosen =
      tag === undefined
        ? // A plain union: the member that can hold the next key (for `keep`, the number when at a leaf).
          options.find((o) =>
            path.length === 0 ? o instanceof z.ZodNumber : o instanceof z.ZodObject && String(path[0]) in o.shape,
          )
        : options.find((o) => {
            if (!(o instanceof z.ZodObject)) return false;
            const lit = stripWrappers(o.shape[tag] as z.ZodType);
            return lit instanceof z.ZodLiteral && lit.values.has(tagValue as z.core.util.Literal);
          });
    if (!chosen) return undefined;
    s = chosen;
  }
  if (path.length === 0) return s;
  if (!(s instanceof z.ZodObject)) return undefined;
  const [key, ...rest] = path;
  const child = (s.shape as Record<string, z.ZodType | undefined>)[String(key)];
  return child ? schemaAt(child, valueAt(input, [key!]), rest) : undefined;
}

/** "an integer from 1 to 64": the whole range, so a wrong type is answered with everything the field accepts. */
function integerRange(s: z.ZodType | undefined): string | undefined {
  if (!(s instanceof z.ZodNumber) || !s.isInt) return undefined;
  const lo = s.minValue !== null && s.minValue > Number.MIN_SAFE_INTEGER ? s.minValue : undefined;
  const hi = s.maxValue !== null && s.maxValue < Number.MAX_SAFE_INTEGER ? s.maxValue : undefined;
  if (lo !== undefined && hi !== undefined) return `an integer from ${lo} to ${hi}`;
  if (lo !== undefined) return `an integer ≥ ${lo}`;
  if (hi !== undefined) return `an integer ≤ ${hi}`;
  return 'an integer';
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = row[j]!;
      row[j] = Math.min(up + 1, row[j - 1]! + 1, diag + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1));
      diag = up;
    }
  }
  return row[b.length]!;
}

function unknownFieldMessage(key: string, allowed: readonly string[]): string {
  const near = allowed
    .map((k) => ({ k, d: editDistance(key, k) }))
    .filter(({ k, d }) => d <= Math.max(1, Math.floor(k.length / 3)))
    .sort((x, y) => x.d - y.d)[0];
  if (key.length > 64) return `unknown field${allowed.length ? ` (allowed: ${allowed.join(', ')})` : ''}`;
  const list = allowed.length ? ` (allowed: ${allowed.join(', ')})` : '';
  return `unknown field${list}${near ? `; did you mean "${near.k}"?` : ''}`;
}

function bound(issue: { origin: string; inclusive?: boolean }, n: number | bigint, side: 'min' | 'max'): string {
  if (issue.origin === 'string' || issue.origin === 'array') {
    const unit = issue.origin === 'string' ? 'characters' : 'items';
    if (side === 'min' && Number(n) === 1) return 'must not be empty';
    return `must have ${side === 'min' ? 'at least' : 'at most'} ${n} ${unit}`;
  }
  const op = side === 'min' ? (issue.inclusive ? '≥' : '>') : issue.inclusive ? '≤' : '<';
  return `must be ${op} ${n}`;
}

/** What the field accepts, from zod's structured issue; a message written in the schema is appended as the reason. */
function expectation(issue: z.core.$ZodIssue, atRoot: boolean, fieldSchema: () => z.ZodType | undefined): string {
  const reason = issue.message !== DEFAULT_MESSAGE ? issue.message : undefined;
  const withReason = (s: string) => (reason ? `${s} (${reason})` : s);
  switch (issue.code) {
    case 'invalid_type':
      if (atRoot && issue.expected === 'object') return withReason('expected a JSON object');
      if (issue.expected === 'number' || issue.expected === 'int') {
        const ints = integerRange(fieldSchema());
        if (ints) return withReason(`expected ${ints}`);
      }
      return withReason(`expected ${TYPE_NAMES[issue.expected] ?? issue.expected}`);
    case 'invalid_value':
      return withReason(oneOf(issue.values));
    case 'too_small':
      return withReason(bound(issue, issue.minimum, 'min'));
    case 'too_big':
      return withReason(bound(issue, issue.maximum, 'max'));
    case 'not_multiple_of':
      return withReason(`must be a multiple of ${issue.divisor}`);
    case 'invalid_format':
      return withReason(`must be a valid ${issue.format}`);
    case 'invalid_union':
      if (reason) return reason;
      if (issue.discriminator !== undefined && 'options' in issue && issue.options) return oneOf(issue.options);
      return 'does not match any allowed form';
    default:
      return reason ?? 'is invalid';
  }
}

/** Turns zod's issues into messages with the path, what is allowed and what was received (read from the input). */
function describeIssues(issues: readonly z.core.$ZodIssue[], input: unknown, schema: z.ZodType): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  const pathText = (p: readonly PropertyKey[]) => clip(p.map(String).join('.'), 200);
  let total = 0;
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      total += issue.keys.length;
      if (out.length >= MAX_ISSUES) continue;
      const at = schemaAt(schema, input, issue.path);
      const allowed = at instanceof z.ZodObject ? Object.keys(at.shape) : [];
      for (const key of issue.keys.slice(0, MAX_ISSUES - out.length)) {
        out.push({ path: pathText([...issue.path, key]), message: unknownFieldMessage(key, allowed) });
      }
      continue;
    }
    total++;
    if (out.length >= MAX_ISSUES) continue;
    // A message that says everything itself (the memory check) gets no "received …".
    if (issue.code === 'custom' && (issue.params as { whole?: boolean } | undefined)?.whole) {
      out.push({ path: pathText(issue.path), message: clip(issue.message, 600) });
      continue;
    }
    const received = valueAt(input, issue.path);
    // A key-variable field may hold a key typed by mistake: never repeat it (into a window, a terminal, a log).
    const got =
      received === undefined
        ? 'missing'
        : issue.path.at(-1) === 'apiKeyEnv'
          ? 'what was typed is not repeated (it may be a key)'
          : `received ${jsonOf(received)}`;
    const expected = clip(
      expectation(issue, issue.path.length === 0, () => schemaAt(schema, input, issue.path)),
      600,
    );
    out.push({ path: pathText(issue.path), message: `${expected} — ${got}` });
  }
  if (total > out.length) {
    out.push({
      path: '',
      message: `and ${total - out.length} more problem${total - out.length === 1 ? '' : 's'} like these`,
    });
  }
  return out;
}

/** Issues listed one by one; past this, a count (a config with 10,000 unknown fields gets a short answer). */
const MAX_ISSUES = 20;

export type Checked<T> = { success: true; data: T } | { success: false; issues: ConfigIssue[] };

/** Validates `input` against any schema with this module's messages (preset files use it too). */
export function checkWith<S extends z.ZodType>(schema: S, input: unknown): Checked<z.output<S>> {
  const r = schema.safeParse(input, { error: () => DEFAULT_MESSAGE });
  return r.success
    ? { success: true, data: r.data }
    : { success: false, issues: describeIssues(r.error.issues, input, schema) };
}

/** Validation without throwing, for the form's inline messages. A config too big to be one is refused unread. */
export function checkRunConfig(input: unknown): Checked<RunConfig> {
  const tooBig = configSizeProblem(input);
  if (tooBig) return { success: false, issues: [{ path: '', message: `the config ${tooBig}` }] };
  return checkWith(runConfigSchema, input);
}

/**
 * Validate a raw config (parsed JSON) and fill in the defaults. Throws ConfigValidationError listing every problem as
 * `<source>: <path>: <what is allowed> — received <value>`.
 */
export function parseRunConfig(input: unknown, source = 'config'): RunConfig {
  const r = checkRunConfig(input);
  if (!r.success) throw new ConfigValidationError(r.issues, source);
  return r.data;
}
