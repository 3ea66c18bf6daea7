/**
 * `export --to verl|marti`: the mapping of a seqgrpo, a MARS and a MARTI preset (what maps to which key or flag, what
 * does not and why), and the launch script: valid shell (`bash -n`) that, run against a stand-in `ray` on PATH, passes
 * the right arguments (the agent JSON valid JSON with the model in it), and refuses to run without the user's model.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportRun, planExport } from '../../../engine/interop/export';
import type { ExportPlan } from '../../../engine/interop/export/plan';
import { submissionOf } from '../../../engine/interop/export/submit';
import { resolvePresetConfig } from '../../../engine/runs/presets/presets';
import { createRunFolder } from '../../../engine/runs/folder/runFolder';
import { UserError } from '../../../engine/base/userError';

let tmp: string;
let home: string;
const runs: Record<string, string> = {};
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-export-'));
  home = path.join(tmp, 'home');
  for (const preset of ['seqgrpo-copy', 'mars-small', 'marti-hetero', 'marti-homo']) {
    const config = resolvePresetConfig(preset);
    runs[preset] = createRunFolder(
      home,
      { algorithm: config.algorithm, preset, config, engineVersion: 'test', seed: 0, tags: [], notes: '' },
      { id: preset },
    ).dir;
  }
  // a stand-in for `ray`: prints its arguments, NUL-separated
  fs.mkdirSync(path.join(tmp, 'bin'));
  fs.writeFileSync(path.join(tmp, 'bin', 'ray'), '#!/bin/sh\nprintf \'%s\\0\' "$@"\n', { mode: 0o755 });
  fs.mkdirSync(path.join(tmp, 'marti', 'marti', 'cli'), { recursive: true });
  fs.writeFileSync(path.join(tmp, 'marti', 'marti', 'cli', 'multi_agent_train_ppo_ray.py'), '');
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const value = (plan: ExportPlan, target: string): string | undefined => {
  const m = plan.mapped.find((x) => x.target === target);
  return m === undefined ? undefined : 'literal' in m.value ? m.value.literal : m.value.shell;
};
const unmapped = (plan: ExportPlan) => plan.unmapped.map((u) => u.setting);

/** Runs a written launch script with the stand-in ray; its arguments, or its exit and stderr. */
function launch(script: string, env: Record<string, string>, args: string[] = []) {
  const r = spawnSync('bash', [script, ...args], {
    env: { PATH: `${path.join(tmp, 'bin')}:${process.env.PATH}`, HOME: tmp, ...env },
    encoding: 'utf8',
  });
  return { code: r.status, stderr: r.stderr, argv: r.stdout.split('\0').slice(0, -1) };
}

describe('export --to verl', () => {
  it('seqgrpo-copy: GRPO with its group size, batch, lr, KL and clip; the toy task and model do not map', () => {
    const c = resolvePresetConfig('seqgrpo-copy');
    if (c.algorithm !== 'seqgrpo') throw new Error('preset changed');
    const plan = planExport(runs['seqgrpo-copy']!, { to: 'verl' });
    expect(value(plan, 'algorithm.adv_estimator')).toBe('grpo');
    expect(value(plan, 'actor_rollout_ref.rollout.n')).toBe(String(c.task.groupSize));
    expect(value(plan, 'data.train_batch_size')).toBe(String(c.task.promptsPerStep));
    expect(value(plan, 'actor_rollout_ref.actor.optim.lr')).toBe(String(c.rl.lr));
    expect(value(plan, 'actor_rollout_ref.actor.use_kl_loss')).toBe(c.rl.klCoef > 0 ? 'True' : 'False');
    expect(value(plan, 'actor_rollout_ref.actor.clip_ratio_low')).toBe(String(c.rl.clipLow));
    expect(value(plan, 'actor_rollout_ref.actor.clip_ratio_high')).toBe(String(c.rl.clipHigh));
    expect(value(plan, 'trainer.total_training_steps')).toBe(String(c.budget.steps));
    expect(value(plan, 'actor_rollout_ref.model.path')).toBe('$MODEL');
    expect(value(plan, 'trainer.rollout_data_dir')).toBe('$OUT_DIR/rollouts');
    expect(unmapped(plan)).toEqual(expect.arrayContaining(['task', 'task.length', 'model', 'pretrain', 'backend']));
    for (const u of plan.unmapped) expect(u.why.length).toBeGreaterThan(10);
  });

  it("mars-small: lengths from System 2's budgets; the dual system, packing and balancing are listed as not mapped", () => {
    const c = resolvePresetConfig('mars-small');
    if (c.algorithm !== 'mars') throw new Error('preset changed');
    const plan = planExport(runs['mars-small']!, { to: 'verl' });
    expect(value(plan, 'actor_rollout_ref.rollout.n')).toBe(String(c.task.groupSize));
    expect(value(plan, 'data.train_batch_size')).toBe(String(c.task.questionsPerStep));
    expect(value(plan, 'data.max_prompt_length')).toBe(String(c.mars.sys2PromptMax));
    expect(value(plan, 'data.max_response_length')).toBe(String(c.mars.sys2ResponseMax));
    expect(unmapped(plan)).toEqual(
      expect.arrayContaining(['mars.sys1Params', 'mars.packing / balance / sys1Pool', 'mars.maxTurns']),
    );
  });

  it('marti-hetero to verl: the tree search and the team are listed as not mapped', () => {
    const plan = planExport(runs['marti-hetero']!, { to: 'verl' });
    expect(value(plan, 'actor_rollout_ref.actor.policy_loss.loss_mode')).toBe('gspo');
    expect(unmapped(plan)).toEqual(expect.arrayContaining(['marti tree search', 'marti.configuration / agents']));
  });

  it('writes a launch script that is valid shell, submits main_ppo with the overrides, and refuses to run without MODEL', () => {
    const out = path.join(tmp, 'out-verl');
    const r = exportRun(runs['seqgrpo-copy']!, { to: 'verl', out, nnodes: 2, gpusPerNode: 4 });
    expect(r.files).toEqual(expect.arrayContaining(['launch.sh', 'mapping.txt', 'export.json', 'overrides.txt']));
    const script = path.join(out, 'launch.sh');
    expect(fs.statSync(script).mode & 0o111).not.toBe(0);
    execFileSync('bash', ['-n', script]);
    const refused = launch(script, { TRAIN_FILES: '/d/train.parquet' });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/set MODEL/);
    expect(refused.argv).toEqual([]);
    const ok = launch(
      script,
      {
        MODEL: 'Qwen/Qwen2.5-7B-Instruct',
        TRAIN_FILES: '/d/train.parquet',
        OUT_DIR: '/shared/x',
        RAY_ADDRESS: 'http://127.0.0.1:8265',
      },
      ['trainer.val_before_train=False'],
    );
    expect(ok.code).toBe(0);
    const a = ok.argv;
    expect(a.slice(0, 3)).toEqual(['job', 'submit', '--address']);
    expect(a.slice(a.indexOf('--'), a.indexOf('--') + 4)).toEqual(['--', 'python3', '-m', 'verl.trainer.main_ppo']);
    expect(a).toEqual(
      expect.arrayContaining([
        'actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct',
        'trainer.rollout_data_dir=/shared/x/rollouts',
        'trainer.logger=["console","file"]',
        'trainer.nnodes=2',
        'trainer.n_gpus_per_node=4',
        'data.val_files=/d/train.parquet',
      ]),
    );
    expect(JSON.parse(a[a.indexOf('--runtime-env-json') + 1]!)).toEqual({
      env_vars: { VERL_FILE_LOGGER_PATH: '/shared/x/metrics.jsonl' },
    });
    expect(a.at(-1)).toBe('trainer.val_before_train=False');
    expect(fs.readFileSync(path.join(out, 'mapping.txt'), 'utf8')).toMatch(/Not mapped \(\d+\):\nmars-lab setting/);
  });
});

describe('export --to marti', () => {
  it("marti-hetero: MARTI's flags, one --agents JSON per agent from MODEL, workflow_args with the node budget", () => {
    const c = resolvePresetConfig('marti-hetero');
    if (c.algorithm !== 'marti') throw new Error('preset changed');
    const plan = planExport(runs['marti-hetero']!, { to: 'marti', model: 'Qwen/Qwen3-8B' });
    expect(value(plan, '--advantage_estimator')).toBe('group_norm');
    expect(value(plan, '--policy_loss_type')).toBe('gspo');
    expect(value(plan, '--rollout_batch_size')).toBe(String(c.marti.problemsPerStep));
    expect(JSON.parse(value(plan, '--workflow_args')!)).toMatchObject({
      max_num_nodes: c.marti.nodesPerTree,
      algo: { class_name: 'AsyncABMCTSA' },
    });
    expect(plan.mapped.some((m) => m.target === '--shared_agents')).toBe(false);
    expect(unmapped(plan)).toEqual(
      expect.arrayContaining(['marti.agentSelect / posterior', 'marti.agents[].rolePrompt', 'task (coding world)']),
    );

    const out = path.join(tmp, 'out-marti');
    exportRun(runs['marti-hetero']!, { to: 'marti', out, model: 'Qwen/Qwen3-8B' });
    const script = path.join(out, 'launch.sh');
    execFileSync('bash', ['-n', script]);
    const odd = '/models/a "b" \\ c & d';
    const r = launch(script, {
      MODEL: odd,
      PROMPT_DATA: 'json@/data/CODE',
      MARTI_DIR: path.join(tmp, 'marti'),
      OUT_DIR: '/shared/m',
    });
    expect(r.stderr).toBe('');
    const a = r.argv;
    expect(a.slice(a.indexOf('--'), a.indexOf('--') + 4)).toEqual([
      '--',
      'python3',
      '-m',
      'marti.cli.multi_agent_train_ppo_ray',
    ]);
    const i = a.indexOf('--agents');
    const agents = [JSON.parse(a[i + 1]!) as unknown, JSON.parse(a[i + 2]!) as unknown];
    expect(agents).toMatchObject([
      { '0': { role: 'generator', pretrain: odd, is_tuning: true } },
      { '1': { role: 'generator', pretrain: odd, is_tuning: true } },
    ]);
    expect(a[i + 3]).toBe('--default_agent');
    expect((JSON.parse(a[a.indexOf('--workflow_args') + 1]!) as { save_path: string }).save_path).toBe(
      '/shared/m/workflow',
    );
    expect(a.slice(a.indexOf('--eps_clip_low_high'), a.indexOf('--eps_clip_low_high') + 3)).toEqual([
      '--eps_clip_low_high',
      String(c.rl.clipLow),
      String(c.rl.clipHigh),
    ]);
    expect(
      (
        JSON.parse(fs.readFileSync(path.join(out, 'agents.json'), 'utf8')) as Record<string, { pretrain: string }>[]
      )[0]!['0']!.pretrain,
    ).toBe('Qwen/Qwen3-8B');
  });

  it('marti-homo shares one parameter set (--shared_agents); a MARS run or an imported run is refused in one line', () => {
    const plan = planExport(runs['marti-homo']!, { to: 'marti' });
    expect(plan.mapped.some((m) => m.target === '--shared_agents')).toBe(true);
    expect(() => planExport(runs['mars-small']!, { to: 'marti' })).toThrow(UserError);
    expect(() => planExport(runs['mars-small']!, { to: 'marti' })).toThrow(/use --to verl/);
    const imported = createRunFolder(
      home,
      { algorithm: 'verl', config: null, engineVersion: 'test', seed: 0, tags: [], notes: '' },
      { id: 'imported' },
    );
    fs.writeFileSync(
      path.join(imported.dir, 'run.json'),
      JSON.stringify({
        ...JSON.parse(fs.readFileSync(path.join(imported.dir, 'run.json'), 'utf8')),
        imported: { from: 'verl' },
      }),
    );
    expect(() => planExport(imported.dir, { to: 'verl' })).toThrow(/imported from another trainer/);
  });
});

describe('export --submit: the Jobs API request', () => {
  it("is the launch script's command: each word shell-quoted, variables filled, JSON escaped, cwd MARTI_DIR", () => {
    const plan = planExport(runs['marti-hetero']!, { to: 'marti' });
    const odd = '/models/it\'s "odd" \\ & $HOME';
    const martiDir = path.join(tmp, 'marti');
    const req = submissionOf(plan, plan.context, {
      MODEL: odd,
      PROMPT_DATA: 'json@/data/CODE',
      MARTI_DIR: martiDir,
      OUT_DIR: '/shared/m',
    });
    expect(req.submission_id).toBe('mars-lab-marti-hetero');
    expect(req.metadata).toEqual({
      mars_lab_run: 'marti-hetero',
      mars_lab_export: 'marti',
      mars_lab_out_dir: '/shared/m',
    });
    // run the entrypoint as Ray's shell would, with the module swapped for a printer of its arguments
    const shown = req.entrypoint.replace('python3 -m marti.cli.multi_agent_train_ppo_ray', 'printf \'%s\\0\' "$PWD"');
    const argv = execFileSync('bash', ['-c', shown], { encoding: 'utf8' }).split('\0').slice(0, -1);
    expect(argv[0]).toBe(fs.realpathSync(martiDir));
    const i = argv.indexOf('--agents');
    expect(JSON.parse(argv[i + 1]!)).toMatchObject({
      '0': { pretrain: odd, save_path: '/shared/m/final/agent0-alpha' },
    });
    expect(argv[argv.indexOf('--prompt_data') + 1]).toBe('json@/data/CODE');
    expect(argv[argv.indexOf('--eval_dataset') + 1]).toBe('json@/data/CODE');
  });

  it('names the launch variable that is missing or not an absolute path', () => {
    const plan = planExport(runs['seqgrpo-copy']!, { to: 'verl', model: 'Qwen/Qwen2.5-0.5B-Instruct' });
    expect(() => submissionOf(plan, plan.context, { OUT_DIR: '/shared/x' })).toThrow(
      /set TRAIN_FILES: verl parquet prompts/,
    );
    expect(() => submissionOf(plan, plan.context, { TRAIN_FILES: '/d/t.parquet', OUT_DIR: 'relative/x' })).toThrow(
      /OUT_DIR=relative\/x is not an absolute path/,
    );
    const req = submissionOf(plan, plan.context, {
      TRAIN_FILES: '/d/t.parquet',
      OUT_DIR: '/shared/x',
      SUBMISSION_ID: 'mine',
    });
    expect(
      req.entrypoint.startsWith(
        'python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct ',
      ),
    ).toBe(true);
    expect(req.entrypoint).toContain(`'trainer.logger=["console","file"]'`);
    expect(req.runtime_env).toEqual({ env_vars: { VERL_FILE_LOGGER_PATH: '/shared/x/metrics.jsonl' } });
    expect(req.submission_id).toBe('mine');
  });
});
