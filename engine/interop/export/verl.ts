/**
 * `export RUN --to verl`: a run's settings as verl Hydra overrides and a launch script that submits
 * `python3 -m verl.trainer.main_ppo key=value …` through `ray job submit` (issue 18 part 3).
 *
 * Keys and their meaning come from verl's own config (verl-project/verl): verl/trainer/config/ppo_trainer.yaml
 * (algorithm.*, data.*, trainer.*), verl/trainer/config/actor/actor.yaml (clip_ratio_low/high, policy_loss.loss_mode,
 * loss_agg_mode, entropy_coeff, use_kl_loss, kl_loss_coef, kl_loss_type — "low_var_kl" is k3 —, ppo_epochs,
 * ppo_mini_batch_size, optim.lr, optim.lr_warmup_steps), rollout/rollout.yaml (n, temperature, top_p,
 * val_kwargs), verl/trainer/ppo/core_algos.py (GRPO's epsilon 1e-6 and unbiased std; the "gspo" loss mode). The launch
 * follows docs/start/multinode.rst (`ray job submit --address=http://HEAD:8265 -- python3 -m verl.trainer.main_ppo`).
 * The dumps `mars-lab import verl` reads are switched on: trainer.rollout_data_dir and the "file" logger
 * (VERL_FILE_LOGGER_PATH, verl/utils/tracking.py).
 *
 * This file holds the mapping, one function per section of verl's config; the launch script and the job's command
 * are in verlLaunch.ts.
 */
import type { RunConfig } from '../../runs/config/configSchema';
import { groupShape, lit, sh, type ExportContext, type ExportPlan, settingsTables, type SettingsTables } from './plan';
import { verlJobCommand, verlScript } from './verlLaunch';

/** What the export sets: the user's model and data, where the run writes, and the dumps import reads. */
function mapExportSettings({ map }: SettingsTables, ctx: ExportContext): void {
  map('actor_rollout_ref.model.path', sh('$MODEL'), '', 'your model: an HF id or a folder (MODEL)');
  map('data.train_files', sh('$TRAIN_FILES'), '', 'verl parquet prompts (TRAIN_FILES)');
  map('data.val_files', sh('$VAL_FILES'), '', 'VAL_FILES (default: TRAIN_FILES)');
  map('trainer.project_name', lit('mars-lab'), '');
  map('trainer.experiment_name', lit(ctx.runId), '', 'the exported run');
  map('trainer.logger', lit('["console","file"]'), '', 'file: JSONL metrics that import verl reads');
  map('trainer.rollout_data_dir', sh('$OUT_DIR/rollouts'), '', 'one <step>.jsonl per step: import verl reads it');
  map('trainer.default_local_dir', sh('$OUT_DIR/checkpoints'), '');
  map('trainer.nnodes', lit(ctx.nnodes), '', '--nnodes');
  map('trainer.n_gpus_per_node', lit(ctx.gpusPerNode), '', '--gpus-per-node');
  map('actor_rollout_ref.rollout.name', lit('vllm'), '', 'or sglang');
}

/** The algorithm: GRPO, its group, batch and optimiser. */
function mapAlgorithm({ map, skip }: SettingsTables, c: RunConfig): void {
  const { groupSize, promptsPerStep, groupFrom, promptsFrom } = groupShape(c);
  const rl = c.rl;
  map(
    'algorithm.adv_estimator',
    lit('grpo'),
    'algorithm',
    `${c.algorithm}'s advantages are group z-scores (docs/algorithms.md §1.2)`,
  );
  map('algorithm.norm_adv_by_std_in_grpo', lit(true), 'algorithm');
  map(
    'actor_rollout_ref.rollout.n',
    lit(groupSize),
    groupFrom,
    c.algorithm === 'marti' ? 'as independent samples: verl has no tree search' : undefined,
  );
  map('data.train_batch_size', lit(promptsPerStep), promptsFrom, 'prompts per step');
  if (promptsPerStep % rl.miniBatches === 0) {
    map(
      'actor_rollout_ref.actor.ppo_mini_batch_size',
      lit(promptsPerStep / rl.miniBatches),
      `${promptsFrom} / rl.miniBatches`,
      'in prompts; verl multiplies by rollout.n',
    );
  } else {
    skip(
      'rl.miniBatches',
      rl.miniBatches,
      `verl's ppo_mini_batch_size (prompts) must divide data.train_batch_size (${promptsPerStep}); set it by hand`,
    );
  }
  map('actor_rollout_ref.actor.ppo_epochs', lit(rl.epochs), 'rl.epochs');
  map('actor_rollout_ref.actor.optim.lr', lit(rl.lr), 'rl.lr', 'an 8B model wants ~1e-6: check it');
  const s = rl.schedule;
  if (s.kind === 'linearWarmup') {
    map('actor_rollout_ref.actor.optim.lr_warmup_steps', lit(s.warmupSteps), 'rl.schedule.warmupSteps');
  }
  if (s.kind === 'cosine') {
    map('actor_rollout_ref.actor.optim.lr_warmup_steps', lit(s.warmupSteps), 'rl.schedule.warmupSteps');
    map(
      'actor_rollout_ref.actor.optim.lr_scheduler_type',
      lit('cosine'),
      'rl.schedule.kind',
      'verl before 0.5 calls it warmup_style',
    );
    map('actor_rollout_ref.actor.optim.min_lr_ratio', lit(s.minLr / rl.lr), 'rl.schedule.minLr / rl.lr');
  }
  map('actor_rollout_ref.actor.grad_clip', lit(rl.gradClip), 'rl.gradClip');
  map('actor_rollout_ref.actor.clip_ratio_low', lit(rl.clipLow), 'rl.clipLow');
  map('actor_rollout_ref.actor.clip_ratio_high', lit(rl.clipHigh), 'rl.clipHigh');
  if (rl.loss === 'gspo') {
    map('actor_rollout_ref.actor.policy_loss.loss_mode', lit('gspo'), 'rl.loss', 'sequence-level ratio');
    map('actor_rollout_ref.actor.loss_agg_mode', lit('seq-mean-token-mean'), 'rl.loss');
  } else {
    map('actor_rollout_ref.actor.policy_loss.loss_mode', lit('vanilla'), 'rl.loss', 'token-level clipped ratio');
    map('actor_rollout_ref.actor.loss_agg_mode', lit('token-mean'), 'rl.loss');
  }
  map('actor_rollout_ref.actor.use_kl_loss', lit(rl.klCoef > 0), 'rl.klCoef');
  if (rl.klCoef > 0) {
    map('actor_rollout_ref.actor.kl_loss_coef', lit(rl.klCoef), 'rl.klCoef');
    map('actor_rollout_ref.actor.kl_loss_type', lit('low_var_kl'), 'rl.klCoef', 'k3, as mars-lab');
  }
  map('algorithm.use_kl_in_reward', lit(false), 'rl.klCoef', 'the KL is a loss, not a reward term');
  map('actor_rollout_ref.actor.entropy_coeff', lit(rl.entCoef), 'rl.entCoef');
  if (rl.tis.enabled) {
    map(
      'algorithm.rollout_correction.rollout_is',
      lit('token'),
      'rl.tis.enabled',
      'verl ≥ 0.6 (rollout_corr_helper.py)',
    );
    map('algorithm.rollout_correction.rollout_is_threshold', lit(rl.tis.cap), 'rl.tis.cap');
  }
  if (rl.zscoreEps !== 1e-6) {
    skip('rl.zscoreEps', rl.zscoreEps, "verl's GRPO adds a fixed epsilon of 1e-6 (core_algos.py)");
  }
  if (rl.stdMode !== 'unbiased') skip('rl.stdMode', rl.stdMode, 'verl divides by torch.std (unbiased)');
  if (rl.singleton !== 'verl') {
    skip(
      'rl.singleton',
      rl.singleton,
      'verl gives a lone sample mean 0 and std 1; with rollout.n ≥ 2 no group is alone',
    );
  }
}

/** Sampling, budget, checkpoints, evaluation. */
function mapRunSettings({ map, skip }: SettingsTables, c: RunConfig): void {
  map('actor_rollout_ref.rollout.temperature', lit(c.sampler.temperature), 'sampler.temperature');
  map('actor_rollout_ref.rollout.top_p', lit(c.sampler.topP), 'sampler.topP');
  map('trainer.total_training_steps', lit(c.budget.steps), 'budget.steps');
  map('trainer.save_freq', lit(c.checkpoint.every), 'checkpoint.every');
  if (c.checkpoint.keep !== 'all') map('trainer.max_actor_ckpt_to_keep', lit(c.checkpoint.keep), 'checkpoint.keep');
  map(
    'trainer.test_freq',
    lit(c.eval.every === 0 ? -1 : c.eval.every),
    'eval.every',
    c.eval.every === 0 ? 'verl then validates only before training' : undefined,
  );
  map('actor_rollout_ref.rollout.val_kwargs.temperature', lit(c.eval.temperature), 'eval.temperature');
  map('actor_rollout_ref.rollout.val_kwargs.do_sample', lit(c.eval.temperature > 0), 'eval.temperature');
  map('data.seed', lit(c.seed), 'seed');
  skip('eval.items', c.eval.items, 'verl validates on all of data.val_files');
}

/** Lengths: mars-lab counts its own tokens. */
function mapLengths({ map, skip }: SettingsTables, c: RunConfig): void {
  if (c.algorithm === 'mars') {
    map(
      'data.max_prompt_length',
      lit(c.mars.sys2PromptMax),
      'mars.sys2PromptMax',
      "mars-lab's tokens: re-check for the model's tokenizer",
    );
    map(
      'data.max_response_length',
      lit(c.mars.sys2ResponseMax),
      'mars.sys2ResponseMax',
      "mars-lab's tokens: re-check for the model's tokenizer",
    );
  } else if (c.algorithm === 'marti') {
    map(
      'data.max_response_length',
      lit(c.task.maxProgramTokens),
      'task.maxProgramTokens',
      "mars-lab's tokens: re-check for the model's tokenizer",
    );
  } else if (c.algorithm === 'chatgrpo' || c.algorithm === 'martipy') {
    map(
      'data.max_response_length',
      lit(c.task.maxNewTokens),
      'task.maxNewTokens',
      "the model's own tokens, as verl counts them",
    );
  } else {
    skip(
      'task.length',
      c.task.length,
      "the toy task's sequences are a few symbols of mars-lab's vocabulary; keep verl's data.max_prompt_length / max_response_length for real prompts",
    );
  }
}

/** What does not map, and why. */
function skipUnmapped({ skip }: SettingsTables, c: RunConfig): void {
  if (c.algorithm === 'chatgrpo' || c.algorithm === 'martipy') {
    skip(
      'model',
      c.model.path,
      'verl fine-tunes the pretrained model you give (MODEL): give it this model as an HF folder (a GGUF does not load there)',
    );
  } else {
    skip(
      'model',
      c.model.from.kind === 'checkpoint' ? c.model.from.path : c.model.size,
      "verl fine-tunes the pretrained model you give (MODEL); mars-lab's models are its own small TF.js transformers and its checkpoints do not load in verl",
    );
  }
  skip(
    'pretrain',
    c.pretrain,
    'supervised pretraining is how mars-lab makes a base model; start verl from an instruct model instead',
  );
  skip(
    'backend',
    c.backend,
    'a TensorFlow.js backend; verl runs FSDP/Megatron with vLLM/SGLang on the GPUs you give (--nnodes, --gpus-per-node)',
  );
  if (c.algorithm === 'seqgrpo') {
    skip(
      'task',
      `${c.task.kind} (${c.task.symbols} symbols)`,
      'mars-lab generates its toy tasks; verl trains on parquet prompts with a reward function: give TRAIN_FILES/VAL_FILES and, for a custom reward, custom_reward_function.path',
    );
  }
  if (c.algorithm === 'mars') {
    skip(
      'task (research worlds)',
      `${c.task.trainWorlds} worlds, ${c.task.families.length} families`,
      'mars-lab generates its worlds; give a QA set as parquet (TRAIN_FILES) and a search tool (actor_rollout_ref.rollout.multi_turn.tool_config_path)',
    );
    skip(
      'mars.maxTurns',
      c.mars.maxTurns,
      'needs multi-turn with a search tool: set actor_rollout_ref.rollout.multi_turn.enable=True and max_assistant_turns with a tool_config_path',
    );
    skip(
      'mars.sys1Params',
      c.mars.sys1Params,
      "verl trains one actor on one trajectory per prompt; System 1's samples (and separate or frozen System 1 weights) need a custom agent loop (rollout.agent.agent_loop_config_path) and trainer changes",
    );
    skip(
      'mars.packing / balance / sys1Pool',
      `${c.mars.packing} / ${c.mars.balance} / ${c.mars.sys1Pool}`,
      "MARS's bin packing, balanced sampling and separate advantage pools have no verl counterpart",
    );
    skip(
      'mars.sys1PromptMax / sys1ResponseMax',
      `${c.mars.sys1PromptMax} / ${c.mars.sys1ResponseMax}`,
      'System 1 windows exist only in a MARS agent loop',
    );
  }
  if (c.algorithm === 'marti') {
    skip(
      'marti.configuration / agents',
      `${c.marti.configuration}: ${c.marti.agents.map((a) => a.id).join(', ')}`,
      'verl trains one actor: heterogeneous agents need one actor each, homogeneous agents are one actor with role prompts in the data; export --to marti keeps the team',
    );
    skip(
      'marti tree search',
      `AB-MCTS-A, ${c.marti.nodesPerTree} nodes, ${c.marti.posterior} posterior, ${c.marti.agentSelect}`,
      "verl samples rollout.n independent responses per prompt; the tree search is MARTI's (export --to marti)",
    );
    skip(
      'task (coding world)',
      `${c.task.trainTasks} tasks`,
      'mars-lab generates its coding tasks; give coding prompts as parquet (TRAIN_FILES) with a unit-test reward',
    );
    if (c.marti.treeShaping) skip('marti.treeShaping', true, 'tree-shaped rewards need the tree');
    if (c.marti.dynamicFiltering) {
      skip('marti.dynamicFiltering', true, 'verl: algorithm.filter_groups (DAPO recipe), not in main_ppo');
    }
  }
}

export function verlPlan(c: RunConfig, ctx: ExportContext): ExportPlan {
  const tables = settingsTables();
  const { mapped, unmapped } = tables;
  mapExportSettings(tables, ctx);
  mapAlgorithm(tables, c);
  mapRunSettings(tables, c);
  mapLengths(tables, c);
  skipUnmapped(tables, c);
  const plan: ExportPlan = {
    target: 'verl',
    context: ctx,
    mapped,
    unmapped,
    files: {},
    command: verlJobCommand(mapped, ctx),
  };
  plan.files['launch.sh'] = verlScript(mapped, c.algorithm, ctx);
  plan.files['overrides.txt'] =
    mapped.map((m) => `${m.target}=${'literal' in m.value ? m.value.literal : m.value.shell}`).join('\n') + '\n';
  return plan;
}
