/**
 * The launch of a MARTI export (marti.ts): the script that submits MARTI's trainer through `ray job submit`, with the
 * agent and workflow JSON filled with MODEL and OUT_DIR (JSON-escaped), and the same command as words for
 * `export --submit` (submit.ts).
 */
import { ENGINE_VERSION } from '../../base/version';
import { lit, type CommandWord, type ExportContext, type JobCommand, type MappedSetting } from './plan';
import { continued, envDefault, shArg } from './shell';

const j = (v: unknown) => JSON.stringify(v);

/** The team as the launch passes it: one JSON object per agent and the workflow's arguments, with @MODEL@ and @OUT_DIR@. */
export interface MartiTeam {
  /** Whether the run searches a tree (AB-MCTS-A) rather than drawing independent samples. */
  tree: boolean;
  agentJson: Record<
    string,
    { role: string; pretrain: string; save_path: string; ckpt_path: string; is_tuning: boolean }
  >[];
  workflowArgs: Record<string, unknown>;
}

/** launch.sh: the mapped flags, with the agent and workflow JSON filled by the script. */
export function martiScript(
  mapped: MappedSetting[],
  { agentJson, workflowArgs }: MartiTeam,
  ctx: ExportContext,
  nodesPerTree: number,
): string {
  const words = mapped.map((x) => {
    if ('literal' in x.value && x.value.literal === '') return x.target;
    if (x.target === '--agents') return `--agents ${agentJson.map((_, i) => `"$AGENT${i}"`).join(' ')}`;
    if (x.target === '--workflow_args') return '--workflow_args "$WORKFLOW_ARGS"';
    if (x.target === '--eps_clip_low_high' || x.target === '--dynamic_filtering_reward_range') {
      return `${x.target} ${(x.value as { literal: string }).literal}`;
    }
    return `${x.target} ${shArg('', x.value)}`;
  });
  const fillLine = (name: string, template: unknown) => `${name}=$(fill ${shArg('', lit(j(template)))})`;
  return [
    '#!/usr/bin/env bash',
    `# Launch of mars-lab run ${ctx.runId} (marti${ctx.preset ? `, preset ${ctx.preset}` : ''}) on MARTI through Ray Jobs.`,
    `# Written by mars-lab ${ENGINE_VERSION} (mars-lab export ${ctx.runId} --to marti); what maps and what does not: mapping.txt.`,
    "# Set MODEL (an HF id or a folder), PROMPT_DATA (and EVAL_DATA), MARTI_DIR (a MARTI checkout, the job's working",
    '# dir), RAY_ADDRESS (reach the dashboard through an SSH tunnel: ssh -L 8265:localhost:8265 HEAD) and OUT_DIR (a folder',
    '# the cluster shares). Extra flags given to this script are passed on. When it has run:',
    '#   mars-lab import marti "$OUT_DIR/workflow" --nodes ' + nodesPerTree,
    'set -euo pipefail',
    envDefault('MODEL', ctx.model),
    envDefault('PROMPT_DATA', undefined),
    'EVAL_DATA="${EVAL_DATA:-$PROMPT_DATA}"',
    envDefault('MARTI_DIR', '.'),
    envDefault('RAY_ADDRESS', 'http://127.0.0.1:8265'),
    envDefault('OUT_DIR', `./marti-${ctx.runId}`),
    envDefault('SUBMISSION_ID', `mars-lab-${ctx.runId}`),
    'die() { echo "launch.sh: $*" >&2; exit 2; }',
    '[ -n "$MODEL" ] || die "set MODEL to a Hugging Face model id or a model folder (or export again with --model)"',
    '[ -n "$PROMPT_DATA" ] || die "set PROMPT_DATA to MARTI coding prompts (e.g. json@/data/CODE)"',
    '[ -f "$MARTI_DIR/marti/cli/multi_agent_train_ppo_ray.py" ] || die "set MARTI_DIR to a checkout of TsinghuaC3I/MARTI"',
    '# JSON strings with MODEL and OUT_DIR in them (escaped for JSON)',
    'esc() { local s=${1//\\\\/\\\\\\\\}; printf \'%s\' "${s//\\"/\\\\\\"}"; }',
    // the replacements quoted: unquoted, bash 5.2 would read their backslashes and & (patsub_replacement)
    'fill() { local t=$1 m o; m=$(esc "$MODEL"); o=$(esc "$OUT_DIR"); t=${t//@MODEL@/"$m"}; printf \'%s\' "${t//@OUT_DIR@/"$o"}"; }',
    ...agentJson.map((a, i) => fillLine(`AGENT${i}`, a)),
    fillLine('WORKFLOW_ARGS', workflowArgs),
    'RUNTIME_ENV="{\\"working_dir\\": \\"$(esc "$MARTI_DIR")\\"}"',
    continued([
      'ray job submit',
      '--address "$RAY_ADDRESS"',
      '--submission-id "$SUBMISSION_ID"',
      '--runtime-env-json "$RUNTIME_ENV"',
      '-- python3 -m marti.cli.multi_agent_train_ppo_ray',
      ...words,
      '"$@"',
    ]),
    '',
  ].join('\n');
}

/** The same words for `export --submit` (shell.ts quotes them into the job's entrypoint). */
function martiCommandWords(mapped: MappedSetting[], { agentJson, workflowArgs }: MartiTeam): CommandWord[] {
  return mapped.flatMap((x): CommandWord[] => {
    if ('literal' in x.value && x.value.literal === '') return [{ text: x.target }];
    if (x.target === '--agents') {
      return [{ text: x.target }, ...agentJson.map((a) => ({ text: j(a), expand: 'json' as const }))];
    }
    if (x.target === '--workflow_args') return [{ text: x.target }, { text: j(workflowArgs), expand: 'json' }];
    if (x.target === '--eps_clip_low_high' || x.target === '--dynamic_filtering_reward_range') {
      return [{ text: x.target }, ...(x.value as { literal: string }).literal.split(' ').map((text) => ({ text }))];
    }
    return [
      { text: x.target },
      'literal' in x.value ? { text: x.value.literal } : { text: x.value.shell, expand: 'shell' },
    ];
  });
}

/** What `export --submit` sends: MARTI's trainer, run from a checkout on the cluster, and the launch's variables. */
export function martiJobCommand(mapped: MappedSetting[], team: MartiTeam, ctx: ExportContext): JobCommand {
  return {
    // MARTI's code is not a package on the cluster's path: the job runs from a checkout there
    before: [{ text: 'cd' }, { text: '$MARTI_DIR', expand: 'shell' }, { text: '&&' }],
    module: 'marti.cli.multi_agent_train_ppo_ray',
    words: martiCommandWords(mapped, team),
    runtimeEnv: {},
    vars: [
      {
        name: 'MODEL',
        ...(ctx.model ? { default: ctx.model } : {}),
        required: 'a Hugging Face model id or a model folder (--model or MODEL)',
      },
      { name: 'PROMPT_DATA', required: 'MARTI coding prompts on the cluster, e.g. json@/data/CODE' },
      { name: 'EVAL_DATA', defaultFrom: 'PROMPT_DATA' },
      { name: 'MARTI_DIR', required: 'a checkout of TsinghuaC3I/MARTI on the cluster', absolute: true },
      {
        name: 'OUT_DIR',
        required: 'a folder the cluster shares, for the workflow logs, TensorBoard and checkpoints',
        absolute: true,
      },
    ],
  };
}
