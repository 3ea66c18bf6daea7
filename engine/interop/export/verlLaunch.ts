/**
 * The launch of a verl export (verl.ts): the script that submits `verl.trainer.main_ppo` with the mapped Hydra
 * overrides through `ray job submit`, and the same command as words for `export --submit` (submit.ts).
 */
import { ENGINE_VERSION } from '../../base/version';
import type { ExportContext, JobCommand, MappedSetting } from './plan';
import { continued, envDefault, shArg } from './shell';

/** launch.sh: the mapped settings as Hydra overrides, after the checks of the user's variables. */
export function verlScript(mapped: MappedSetting[], algorithm: string, ctx: ExportContext): string {
  const overrides = mapped.map((m) => shArg(`${m.target}=`, m.value));
  return [
    '#!/usr/bin/env bash',
    `# Launch of mars-lab run ${ctx.runId} (${algorithm}${ctx.preset ? `, preset ${ctx.preset}` : ''}) on verl through Ray Jobs.`,
    `# Written by mars-lab ${ENGINE_VERSION} (mars-lab export ${ctx.runId} --to verl); what maps and what does not: mapping.txt.`,
    '# Set MODEL (an HF id or a folder), TRAIN_FILES (and VAL_FILES) to verl parquet prompts, RAY_ADDRESS to the Ray',
    '# dashboard (reach it through an SSH tunnel: ssh -L 8265:localhost:8265 HEAD), OUT_DIR to a folder the cluster',
    '# shares. Extra Hydra overrides given to this script are passed on. When it has run: mars-lab import verl "$OUT_DIR".',
    'set -euo pipefail',
    envDefault('MODEL', ctx.model),
    envDefault('TRAIN_FILES', undefined),
    'VAL_FILES="${VAL_FILES:-$TRAIN_FILES}"',
    envDefault('RAY_ADDRESS', 'http://127.0.0.1:8265'),
    envDefault('OUT_DIR', `./verl-${ctx.runId}`),
    envDefault('SUBMISSION_ID', `mars-lab-${ctx.runId}`),
    'die() { echo "launch.sh: $*" >&2; exit 2; }',
    '[ -n "$MODEL" ] || die "set MODEL to a Hugging Face model id or a model folder (or export again with --model)"',
    '[ -n "$TRAIN_FILES" ] || die "set TRAIN_FILES to verl parquet prompts (verl examples/data_preprocess makes them)"',
    'case "$OUT_DIR" in *\\"*|*\\\\*) die "OUT_DIR may not contain quotes or backslashes";; esac',
    'RUNTIME_ENV="{\\"env_vars\\": {\\"VERL_FILE_LOGGER_PATH\\": \\"$OUT_DIR/metrics.jsonl\\"}}"',
    continued([
      'ray job submit',
      '--address "$RAY_ADDRESS"',
      '--submission-id "$SUBMISSION_ID"',
      '--runtime-env-json "$RUNTIME_ENV"',
      '-- python3 -m verl.trainer.main_ppo',
      ...overrides,
      '"$@"',
    ]),
    '',
  ].join('\n');
}

/** What `export --submit` sends: verl's trainer with the overrides, the file logger's path, the launch's variables. */
export function verlJobCommand(mapped: MappedSetting[], ctx: ExportContext): JobCommand {
  return {
    before: [],
    module: 'verl.trainer.main_ppo',
    words: mapped.map((m) =>
      'literal' in m.value
        ? { text: `${m.target}=${m.value.literal}` }
        : { text: `${m.target}=${m.value.shell}`, expand: 'shell' as const },
    ),
    runtimeEnv: { env_vars: { VERL_FILE_LOGGER_PATH: '$OUT_DIR/metrics.jsonl' } },
    vars: [
      {
        name: 'MODEL',
        ...(ctx.model ? { default: ctx.model } : {}),
        required: 'a Hugging Face model id or a model folder (--model or MODEL)',
      },
      {
        name: 'TRAIN_FILES',
        required: 'verl parquet prompts, a path on the cluster (verl examples/data_preprocess makes them)',
      },
      { name: 'VAL_FILES', defaultFrom: 'TRAIN_FILES' },
      {
        name: 'OUT_DIR',
        required: 'a folder the cluster shares, for rollouts, metrics and checkpoints',
        absolute: true,
      },
    ],
  };
}
