/**
 * An export to a real trainer (issue 18 part 3): what maps (each target setting with the mars-lab setting it comes
 * from), what does not (and why), and the files to write. A value is literal, or a shell expression (`$MODEL`,
 * `$OUT_DIR/rollouts`) the launch script expands; shell.ts quotes either for the command line.
 */
import type { RunConfig } from '../../runs/config/configSchema';

/** A value as the launch script passes it: literal text, or text with $VARIABLES the script defines. */
export type ArgValue = { literal: string } | { shell: string };

export interface MappedSetting {
  /** The target's setting: a Hydra key (verl) or a flag (MARTI). */
  target: string;
  value: ArgValue;
  /** The mars-lab setting(s) it comes from ('' for what the export itself sets: paths, logging). */
  from: string;
  note?: string;
}

export interface UnmappedSetting {
  /** The mars-lab setting. */
  setting: string;
  value: string;
  why: string;
}

/** The two tables an export fills as it goes: `map` a target setting (null: an empty literal), `skip` one that has none. */
export function settingsTables() {
  const mapped: MappedSetting[] = [];
  const unmapped: UnmappedSetting[] = [];
  const map = (target: string, value: ArgValue | null, from: string, note?: string) =>
    mapped.push({ target, value: value ?? { literal: '' }, from, ...(note ? { note } : {}) });
  const skip = (setting: string, value: unknown, why: string) =>
    unmapped.push({ setting, value: typeof value === 'string' ? value : JSON.stringify(value), why });
  return { mapped, unmapped, map, skip };
}

export interface ExportContext {
  runId: string;
  algorithm: string;
  preset?: string;
  /** The user's model (an HF id or a folder); without it the script refuses to run until MODEL is set. */
  model?: string;
  nnodes: number;
  gpusPerNode: number;
}

/**
 * A word of the job's entrypoint: literal, or with `$NAME` references (expand 'shell') or `@NAME@` placeholders in
 * JSON (expand 'json': the value is JSON-escaped), filled from the launch variables.
 */
export interface CommandWord {
  text: string;
  expand?: 'shell' | 'json';
}

/** A variable of the launch (MODEL, TRAIN_FILES, OUT_DIR, …): its default, or why it is required. */
export interface LaunchVar {
  name: string;
  default?: string;
  /** Another variable whose value is the default (VAL_FILES defaults to TRAIN_FILES). */
  defaultFrom?: string;
  required?: string;
  /** Must be an absolute path (the job runs on the cluster, in its own working folder). */
  absolute?: boolean;
}

/** What `export --submit` sends to the Ray Jobs API: the same command the launch script runs after `--`. */
export interface JobCommand {
  /** Words before the module: `cd $MARTI_DIR &&` for MARTI. */
  before: CommandWord[];
  module: string;
  words: CommandWord[];
  /** runtime_env, with `$NAME` references in its strings. */
  runtimeEnv: Record<string, unknown>;
  vars: LaunchVar[];
}

export interface ExportPlan {
  target: 'verl' | 'marti';
  context: ExportContext;
  mapped: MappedSetting[];
  unmapped: UnmappedSetting[];
  /** Files to write in the output folder: name → text (the script is made executable). */
  files: Record<string, string>;
  command: JobCommand;
}

export const lit = (v: string | number | boolean): ArgValue => ({
  literal: typeof v === 'boolean' ? (v ? 'True' : 'False') : String(v),
});
export const sh = (expr: string): ArgValue => ({ shell: expr });

/** The group size and prompts per step of a run, whatever its algorithm (docs/algorithms.md §1.2: a group is G samples). */
export function groupShape(c: RunConfig): {
  groupSize: number;
  promptsPerStep: number;
  groupFrom: string;
  promptsFrom: string;
} {
  if (c.algorithm === 'seqgrpo' || c.algorithm === 'chatgrpo') {
    return {
      groupSize: c.task.groupSize,
      promptsPerStep: c.task.promptsPerStep,
      groupFrom: 'task.groupSize',
      promptsFrom: 'task.promptsPerStep',
    };
  }
  if (c.algorithm === 'mars') {
    return {
      groupSize: c.task.groupSize,
      promptsPerStep: c.task.questionsPerStep,
      groupFrom: 'task.groupSize',
      promptsFrom: 'task.questionsPerStep',
    };
  }
  if (c.algorithm === 'martipy') {
    return {
      groupSize: c.search.nodesPerTree,
      promptsPerStep: c.search.problemsPerStep,
      groupFrom: 'search.nodesPerTree',
      promptsFrom: 'search.problemsPerStep',
    };
  }
  return {
    groupSize: c.marti.nodesPerTree,
    promptsPerStep: c.marti.problemsPerStep,
    groupFrom: 'marti.nodesPerTree',
    promptsFrom: 'marti.problemsPerStep',
  };
}

/** The two tables as fixed-width text (what `export` prints). */
export function planTables(plan: ExportPlan): string {
  const table = (head: string[], rows: string[][]) => {
    const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    return [head, w.map((n) => '-'.repeat(n)), ...rows]
      .map((r) =>
        r
          .map((c, i) => c.padEnd(w[i]!))
          .join('  ')
          .trimEnd(),
      )
      .join('\n');
  };
  // long values (the agent JSON) are cut in the table; export.json and the script have them whole
  const cut = (t: string) => (t.length > 60 ? `${t.slice(0, 59)}…` : t);
  const show = (v: ArgValue) => cut('literal' in v ? v.literal : v.shell);
  const mapped = table(
    ['mars-lab', `${plan.target}`, 'value', 'note'],
    plan.mapped.map((m) => [m.from || '(export)', m.target, show(m.value), m.note ?? '']),
  );
  const unmapped = table(
    ['mars-lab setting', 'value', `why it does not map to ${plan.target}`],
    plan.unmapped.map((u) => [u.setting, u.value, u.why]),
  );
  return `Mapped (${plan.mapped.length}):\n${mapped}\n\nNot mapped (${plan.unmapped.length}):\n${unmapped}\n`;
}

/** The tables and their two writers, as the section builders of an export take them. */
export type SettingsTables = ReturnType<typeof settingsTables>;
