/**
 * `export RUN --to marti`: a MARTI-MARS² run as MARTI's flags, agent JSON and workflow arguments, and a launch script
 * that submits `python3 -m marti.cli.multi_agent_train_ppo_ray …` through `ray job submit` (issue 18 part 3).
 *
 * Flags and JSON come from MARTI's own code (TsinghuaC3I/MARTI, main): marti/cli/multi_agent_train_ppo_ray.py's
 * argparse (--agents takes one JSON object per agent, --default_agent, --workflow_args, --shared_agents copies the
 * first agent's model to the others, --advantage_estimator group_norm, --policy_loss_type ppo|gspo,
 * --eps_clip_low_high, --init_kl_coef, --use_kl_loss, --kl_estimator k3, --max_norm, --dynamic_filtering,
 * --overlong_buffer_len, --enable_vllm_is_correction, …) and examples/mars2/run_train_multi_mcts.sh (the agent JSON
 * `{"0": {"role", "pretrain", "save_path", "ckpt_path", "is_tuning"}}`, workflow_args `{max_num_nodes,
 * eval_max_num_nodes, save_path, algo: {class_name: "AsyncABMCTSA", params}}`, the ab_mcts workflow and processor).
 * The workflow's save_path is where MARTI writes the llm_logs `mars-lab import marti` reads.
 *
 * The repository's example scripts call `openrlhf.…` module paths while the package is `marti/` (docs/scale-out.md §2.3);
 * the script uses the package's paths under MARTI_DIR.
 *
 * This file holds the mapping, one function per section of MARTI's flags; the launch script and the job's command
 * are in martiLaunch.ts.
 */
import type { MartiConfig } from '../../runs/config/configSchema';
import { UserError } from '../../base/userError';
import { martiJobCommand, martiScript, type MartiTeam } from './martiLaunch';
import { lit, sh, type ExportContext, type ExportPlan, settingsTables, type SettingsTables } from './plan';

const j = (v: unknown) => JSON.stringify(v);

type Marti = MartiConfig['marti'];

/** The team: one --agents JSON per agent; homogeneous = one parameter set shared (--shared_agents); the workflow. */
function mapTeam({ map }: SettingsTables, m: Marti): MartiTeam {
  const tree = !(m.configuration === 'single' && m.singleSearch === 'none');
  const agents = m.configuration === 'single' ? m.agents.slice(0, 1) : m.agents;
  const agentJson = agents.map((a, i) => ({
    [String(i)]: {
      role: 'generator',
      pretrain: '@MODEL@',
      save_path: `@OUT_DIR@/final/agent${i}-${a.id}`,
      ckpt_path: `@OUT_DIR@/ckpt/agent${i}-${a.id}`,
      is_tuning: true,
    },
  }));
  map(
    '--agents',
    lit(agentJson.map((a) => j(a)).join(' ')),
    'marti.agents',
    `${agents.length} agent(s) (${agents.map((a) => a.id).join(', ')}), each from MODEL`,
  );
  if (m.configuration === 'homogeneous') {
    map('--shared_agents', null, 'marti.configuration', 'homogeneous: one parameter set');
  }
  map('--default_agent', lit(j({ is_reasoning_model: false })), '');
  const workflowArgs = tree
    ? {
        max_num_nodes: m.nodesPerTree,
        eval_max_num_nodes: m.evalNodes,
        save_path: '@OUT_DIR@/workflow',
        algo: { class_name: 'AsyncABMCTSA', params: {} },
      }
    : { save_path: '@OUT_DIR@/workflow' };
  map(
    '--workflow_args',
    lit(j(workflowArgs)),
    tree ? 'marti.nodesPerTree, marti.evalNodes' : 'marti.singleSearch',
    tree ? 'save_path: the llm_logs import marti reads' : undefined,
  );
  if (tree) {
    map(
      '--workflow_func_path',
      sh('$MARTI_DIR/marti/agent_workflows/ab_mcts_workflow.py'),
      'marti.singleSearch',
      'AB-MCTS-A tree search',
    );
    map('--processor_func_path', sh('$MARTI_DIR/marti/agent_workflows/ab_mcts_processor.py'), '');
  } else {
    map(
      '--workflow_func_path',
      sh('$MARTI_DIR/marti/agent_workflows/default_workflow.py'),
      'marti.singleSearch',
      'vanilla GRPO: N independent samples',
    );
  }
  return { tree, agentJson, workflowArgs };
}

/** The algorithm: group-normalised advantages, batches, the optimiser and its schedule, the loss and its filters. */
function mapAlgorithm({ map, skip }: SettingsTables, c: MartiConfig, tree: boolean): void {
  const m = c.marti;
  const rl = c.rl;
  map('--advantage_estimator', lit('group_norm'), 'algorithm', 'all nodes of a tree (or the N samples) are one group');
  map(
    '--n_samples_per_prompt',
    lit(tree ? 1 : m.nodesPerTree),
    tree ? '' : 'marti.nodesPerTree',
    tree ? "the tree's nodes are the group" : undefined,
  );
  map('--rollout_batch_size', lit(m.problemsPerStep), 'marti.problemsPerStep');
  map('--train_batch_size', lit(m.trainBatch), 'marti.trainBatch');
  map('--micro_train_batch_size', lit(1), '');
  map('--micro_rollout_batch_size', lit(1), '');
  map('--max_epochs', lit(rl.epochs), 'rl.epochs');
  map('--num_episodes', lit(1), '');
  map(
    '--max_samples',
    lit(c.budget.steps * m.problemsPerStep),
    'budget.steps × marti.problemsPerStep',
    'MARTI stops when the prompts run out',
  );
  map('--actor_learning_rate', lit(rl.lr), 'rl.lr', 'an 8B model wants ~1e-6: check it');
  const s = rl.schedule;
  if (s.kind === 'cosine') {
    map('--lr_scheduler', lit('cosine_with_min_lr'), 'rl.schedule.kind');
    if (s.minLr !== 0) {
      skip('rl.schedule.minLr', s.minLr, "OpenRLHF's cosine_with_min_lr decays to a fixed 10% of the peak");
    }
  } else map('--lr_scheduler', lit('constant_with_warmup'), 'rl.schedule.kind');
  map(
    '--lr_warmup_ratio',
    lit(s.kind === 'constant' ? 0 : s.warmupSteps / c.budget.steps),
    'rl.schedule.warmupSteps / budget.steps',
  );
  map('--policy_loss_type', lit(rl.loss === 'gspo' ? 'gspo' : 'ppo'), 'rl.loss');
  map('--eps_clip_low_high', lit(`${rl.clipLow} ${rl.clipHigh}`), 'rl.clipLow, rl.clipHigh');
  if (rl.klCoef > 0) {
    map('--use_kl_loss', null, 'rl.klCoef');
    map('--init_kl_coef', lit(rl.klCoef), 'rl.klCoef');
    map('--kl_estimator', lit('k3'), 'rl.klCoef', 'k3, as mars-lab');
  } else map('--init_kl_coef', lit(0), 'rl.klCoef');
  if (rl.entCoef > 0) map('--entropy_loss_coef', lit(rl.entCoef), 'rl.entCoef');
  map('--max_norm', lit(rl.gradClip), 'rl.gradClip');
  if (rl.tis.enabled) {
    map('--enable_vllm_is_correction', null, 'rl.tis.enabled');
    map('--vllm_is_truncated_threshold', lit(rl.tis.cap), 'rl.tis.cap');
  }
  if (m.dynamicFiltering) {
    map('--dynamic_filtering', null, 'marti.dynamicFiltering');
    map(
      '--dynamic_filtering_reward_range',
      lit('0 1'),
      'marti.dynamicFiltering',
      'drops groups whose mean reward is 0 or 1',
    );
  }
  if (m.overlongPenalty) {
    map('--overlong_buffer_len', lit(m.overlongPenalty.buffer), 'marti.overlongPenalty.buffer');
    map('--overlong_penalty_factor', lit(m.overlongPenalty.factor), 'marti.overlongPenalty.factor');
  }
  if (rl.zscoreEps !== 1e-9) skip('rl.zscoreEps', rl.zscoreEps, "MARTI's group_norm adds a fixed 1e-9");
  if (rl.stdMode !== 'unbiased') skip('rl.stdMode', rl.stdMode, 'MARTI divides by torch.std (unbiased)');
}

/** Sampling, lengths, budget, checkpoints, evaluation, data and the cluster's resources. */
function mapRunSettings({ map }: SettingsTables, c: MartiConfig, ctx: ExportContext): void {
  const m = c.marti;
  map('--temperature', lit(c.sampler.temperature), 'sampler.temperature');
  map('--top_p', lit(c.sampler.topP), 'sampler.topP');
  map('--eval_temperature', lit(m.evalSearchTemperature), 'marti.evalSearchTemperature');
  map(
    '--generate_max_len',
    lit(c.task.maxProgramTokens),
    'task.maxProgramTokens',
    "mars-lab's tokens: re-check for the model's tokenizer",
  );
  map('--save_steps', lit(c.checkpoint.every), 'checkpoint.every');
  if (c.checkpoint.keep !== 'all') map('--max_ckpt_num', lit(c.checkpoint.keep), 'checkpoint.keep');
  map('--eval_steps', lit(c.eval.every === 0 ? -1 : c.eval.every), 'eval.every');
  map('--seed', lit(c.seed), 'seed');
  map('--prompt_data', sh('$PROMPT_DATA'), '', 'your coding prompts (PROMPT_DATA), e.g. json@DIR');
  map('--input_key', lit('prompt'), '');
  map('--label_key', lit('label'), '');
  map('--eval_dataset', sh('$EVAL_DATA'), '', 'EVAL_DATA (default: PROMPT_DATA)');
  map('--use_tensorboard', sh('$OUT_DIR/tensorboard'), '', 'MARTI logs metrics to TensorBoard or wandb only');
  map('--actor_num_nodes', lit(ctx.nnodes), '', '--nnodes');
  map('--actor_num_gpus_per_node', lit(ctx.gpusPerNode), '', '--gpus-per-node');
  map('--vllm_num_engines', lit(ctx.nnodes * ctx.gpusPerNode), '', 'one per GPU');
  map('--vllm_tensor_parallel_size', lit(1), '');
  for (const f of [
    '--colocate_all_models',
    '--packing_samples',
    '--bf16',
    '--gradient_checkpointing',
    '--vllm_enable_sleep',
    '--deepspeed_enable_sleep',
  ]) {
    map(f, null, '', f === '--packing_samples' ? 'MARTI requires it' : 'as examples/mars2');
  }
  map('--zero_stage', lit(3), '', 'as examples/mars2');
}

/** What does not map, and why. */
function skipUnmapped({ skip }: SettingsTables, c: MartiConfig): void {
  const m = c.marti;
  skip(
    'model',
    c.model.from.kind === 'checkpoint' ? c.model.from.path : c.model.size,
    "MARTI fine-tunes the pretrained model you give (MODEL); mars-lab's models are its own small TF.js transformers and its checkpoints do not load in MARTI",
  );
  if (m.configuration === 'heterogeneous') {
    const own = m.agents.filter((a) => a.size !== undefined || a.from !== undefined);
    skip(
      'marti.agents[].size / from',
      own.length ? own.map((a) => a.id).join(', ') : 'none',
      'every agent starts from MODEL; give an agent another model by editing its "pretrain" in agents.json / the script',
    );
  }
  skip(
    'marti.agents[].rolePrompt',
    m.agents.map((a) => a.rolePrompt || '""').join(' | '),
    "MARTI's prompts come from its workflow's prompt templates (mcts_utils/code_prompt.py)",
  );
  skip(
    'marti.agentSelect / posterior',
    `${m.agentSelect} / ${m.posterior}`,
    "MARTI's AsyncABMCTSA does its own Thompson sampling with its own priors",
  );
  if (m.treeShaping) skip('marti.treeShaping', true, "MARTI's processor has no tree-shaped reward");
  skip('marti.agentUpdate', m.agentUpdate, 'MARTI updates every agent each step from its --train_batch_size buffer');
  if (m.tplus.enabled) {
    skip('marti.tplus', m.tplus, "T+ is mars-lab's test-time scaling; MARTI evaluates with eval_max_num_nodes");
  }
  skip(
    'task (coding world)',
    `${c.task.trainTasks} tasks, ${c.task.publicTests} public / ${c.task.privateTests} private tests`,
    'mars-lab generates its coding tasks in its own pipeline language; give MARTI coding prompts with tests (PROMPT_DATA)',
  );
  skip(
    'pretrain',
    c.pretrain,
    'supervised pretraining is how mars-lab makes a base model; start MARTI from an instruct model',
  );
  skip(
    'eval.items / eval.temperature',
    `${c.eval.items} / ${c.eval.temperature}`,
    'MARTI evaluates all of --eval_dataset at --eval_temperature',
  );
  skip('backend', c.backend, 'a TensorFlow.js backend; MARTI runs DeepSpeed with vLLM on the GPUs you give');
}

export function martiPlan(c: MartiConfig, ctx: ExportContext): ExportPlan {
  const tables = settingsTables();
  const { mapped, unmapped } = tables;
  const m = c.marti;
  const team = mapTeam(tables, m);
  mapAlgorithm(tables, c, team.tree);
  mapRunSettings(tables, c, ctx);
  skipUnmapped(tables, c);
  return {
    target: 'marti',
    context: ctx,
    mapped,
    unmapped,
    command: martiJobCommand(mapped, team, ctx),
    files: {
      'launch.sh': martiScript(mapped, team, ctx, m.nodesPerTree),
      'agents.json':
        JSON.stringify(team.agentJson, null, 2)
          .replaceAll('@MODEL@', ctx.model ?? '$MODEL')
          .replaceAll('@OUT_DIR@', '$OUT_DIR') + '\n',
      'workflow_args.json': JSON.stringify(team.workflowArgs, null, 2).replaceAll('@OUT_DIR@', '$OUT_DIR') + '\n',
    },
  };
}

/** MARTI trains MARTI-MARS² teams: other algorithms export to verl. */
export function requireMarti(c: { algorithm: string }, runId: string): void {
  if (c.algorithm !== 'marti') {
    throw new UserError(
      `export --to marti: run ${runId} is a ${c.algorithm} run; MARTI trains multi-agent tree search (marti runs): use --to verl for it`,
    );
  }
}
