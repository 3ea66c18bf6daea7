/**
 * What a `martipy` run learns from and is judged on (trainer.ts): the generated training pool (refused when one of its
 * problems is an evaluated one, by normalised-text hash), the held-out task file's first eval.items problems and the
 * generator's held-out problems (task.evalGenerated), the sandbox the programs run in, and the evaluation: pass@1 of
 * each parameter set at eval.temperature (greedy at 0).
 */
import fs from 'node:fs';
import { UserError } from '../../base/userError';
import { detectIsolation } from '../../code/sandbox/isolation';
import { DEFAULT_LIMITS, sandboxLimitsSchema } from '../../code/sandbox/limits';
import { taskFilePath } from '../../code/tasks/namedTasks';
import { loadTaskFile, type CodeTask } from '../../code/tasks/taskFile';
import { realModelPath } from '../../model/realModel';
import { InProcessChatPolicy } from '../../policy/chatPolicy';
import { Rng } from '../../random/prng';
import { backendReport } from '../../tensor/backend';
import { realModelMemoryPlan, type RealModelMemoryPlan } from '../../training/memoryBudget';
import { modelHeaderConfig } from '../../training/realModelHeader';
import type { EvalResult } from '../../training/trainer';
import { generatePythonTasks, overlapping } from './generatedTasks';
import { answerOnce, type SandboxContext } from './pythonTrees';
import type { MartipyConfig } from './trainConfig';
import { activate, teamOf, type ParamSet } from './trainSets';

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

/** The held-out problems: the first eval.items of the task file. */
async function evalTasksOf(cfg: MartipyConfig): Promise<CodeTask[]> {
  const file = await taskFilePath(cfg.task.evalTasks, 'task.evalTasks');
  if (!fs.existsSync(file)) {
    throw new UserError(`task.evalTasks: ${file} does not exist (a HumanEval/MBPP jsonl file, or humaneval)`);
  }
  return loadTaskFile(file).slice(0, cfg.eval.items);
}

/** The generator's held-out problems the run is also evaluated on (none when task.evalGenerated is 0). */
function heldoutGenerated(cfg: MartipyConfig): CodeTask[] {
  const { evalGenerated, evalSeed, minOps, maxOps } = cfg.task;
  if (evalGenerated === 0) return [];
  try {
    return generatePythonTasks(evalGenerated, evalSeed, { minOps, maxOps }, 'heldout', 'asserts');
  } catch (err) {
    throw new UserError(`task.evalGenerated: ${(err as Error).message}`);
  }
}

/** The training pool, refused when any of its problems is an evaluated one (normalised-text hash). */
export async function trainPoolOf(cfg: MartipyConfig): Promise<CodeTask[]> {
  const { trainProblems, trainSeed, minOps, maxOps } = cfg.task;
  let pool: CodeTask[];
  try {
    pool = generatePythonTasks(trainProblems, trainSeed, { minOps, maxOps }, 'train', 'asserts');
  } catch (err) {
    throw new UserError(`task.trainProblems: ${(err as Error).message}`);
  }
  const clash = overlapping(pool, [...(await evalTasksOf(cfg)), ...heldoutGenerated(cfg)]);
  if (clash.length) {
    throw new UserError(
      `task: ${clash.length} training problem(s) are evaluated problems (${clash[0]!.train} is ${clash[0]!.evaluated}); choose another task.trainSeed`,
    );
  }
  return pool;
}

/**
 * A bound on a node's prompt: the problem through the template (~200 tokens for a generated one, more for HumanEval's)
 * and, for a refinement, the parent's reply (up to task.maxNewTokens) and its feedback (a line a test; rich feedback
 * adds errors and output). A trained row is cut at task.maxTrainTokens whatever this says.
 */
const PROBLEM_AND_FEEDBACK_TOKENS = 512;

/**
 * The run's memory plan here, from the model's header alone (nothing allocated): a step trains on every node of its
 * trees (search.problemsPerStep × search.nodesPerTree rows). Null for an architecture this engine cannot build (loading
 * then says why). An agent's own base model (heterogeneous) is not in it.
 */
export async function martipyMemoryPlan(cfg: MartipyConfig, totalmem?: number): Promise<RealModelMemoryPlan | null> {
  const config = await modelHeaderConfig(await realModelPath(cfg.model.path, 'model.path'));
  if (!config) return null;
  const s = cfg.search;
  // a trained row: the prompt bound and the reply, cut at task.maxTrainTokens (longer nodes are left out of the update)
  const row = Math.min(PROBLEM_AND_FEEDBACK_TOKENS + 2 * cfg.task.maxNewTokens, cfg.task.maxTrainTokens);
  const reply = Math.min(cfg.task.maxNewTokens, row);
  const planAt = (backend: string) =>
    realModelMemoryPlan(
      config,
      {
        backend,
        ignoreMemoryCheck: cfg.budget.ignoreMemoryCheck,
        rows: s.problemsPerStep * s.nodesPerTree,
        replyTokens: reply,
        promptTokens: row - reply,
        loraRank: cfg.model.lora?.rank ?? null,
        rowsField: 'search.problemsPerStep × search.nodesPerTree',
        fewerRows: (maxRows) => {
          const problems = Math.floor(maxRows / s.nodesPerTree);
          return problems >= 1 ? `search.problemsPerStep ${problems} (at search.nodesPerTree ${s.nodesPerTree})` : null;
        },
      },
      totalmem,
    );
  if (cfg.backend !== 'auto') return planAt(cfg.backend);
  // 'auto': at the backend this process chose (a run's start); before one is chosen (the launch form), at wasm's small
  // passes and at the others' large ones, the first that fits: the run's own start then checks the one it got
  const chosen = backendReport()?.chosen;
  if (chosen) return planAt(chosen);
  const wasm = planAt('wasm');
  return wasm.problem ? planAt('auto') : wasm;
}

export async function sandboxOf(cfg: MartipyConfig): Promise<SandboxContext> {
  const iso = await detectIsolation({
    ...(cfg.task.python ? { python: cfg.task.python } : {}),
    allowUnsandboxed: cfg.task.unsafeNoSandbox,
  });
  return { iso, limits: sandboxLimitsSchema.parse({ ...DEFAULT_LIMITS, timeoutS: cfg.task.timeoutS }) };
}

export function evalIdentity(cfg: MartipyConfig): EvalResult['identity'] {
  return {
    algorithm: 'martipy',
    split: 'heldout',
    model: cfg.model.path,
    lora: cfg.model.lora !== null,
    agents: teamOf(cfg)
      .map((a) => `${a.id}:${a.paramId}${a.model ? `:${a.model}` : ''}`)
      .join(','),
    evalTasks: cfg.task.evalTasks,
    items: cfg.eval.items,
    evalGenerated: cfg.task.evalGenerated,
    evalSeed: cfg.task.evalSeed,
    minOps: cfg.task.minOps,
    maxOps: cfg.task.maxOps,
    maxNewTokens: cfg.task.maxNewTokens,
    temperature: cfg.eval.temperature,
    ...(cfg.eval.drawSeed ? { drawSeed: cfg.eval.drawSeed } : {}),
  };
}

/**
 * Greedy (eval.temperature) pass@1 of each parameter set on the held-out problems: the first agent's set is the
 * headline `pass1` (and the items); a heterogeneous team's other sets are `pass1.<id>`. On the generator's held-out
 * problems (task.evalGenerated), `generatedPass1` (and `generatedPass1.<id>`).
 */
export async function evaluateSets(
  cfg: MartipyConfig,
  sets: readonly Pick<ParamSet, 'id' | 'real' | 'lora'>[],
  sandbox: SandboxContext,
): Promise<EvalResult> {
  const tasks = await evalTasksOf(cfg);
  const generated = heldoutGenerated(cfg);
  const root = new Rng(cfg.seed).split('eval-tokens');
  const rng = cfg.eval.drawSeed ? root.split(`draws-${cfg.eval.drawSeed}`) : root;
  const sampling = { maxNewTokens: cfg.task.maxNewTokens, temperature: cfg.eval.temperature, topP: 1 };
  const metrics: Record<string, number> = {};
  let items: EvalResult['items'] = [];
  for (const [i, set] of sets.entries()) {
    activate(set);
    const policy = new InProcessChatPolicy(set.real);
    const answers = await answerOnce(tasks, policy, sampling, rng, sandbox);
    const pass = mean(answers.map((a) => (a.score.status === 'passed' ? 1 : 0)));
    if (generated.length) {
      const own = await answerOnce(generated, policy, sampling, rng, sandbox);
      metrics[i === 0 ? 'generatedPass1' : `generatedPass1.${set.id}`] = mean(
        own.map((a) => (a.score.status === 'passed' ? 1 : 0)),
      );
    }
    if (i === 0) {
      metrics.pass1 = pass;
      metrics.noCodeShare = mean(answers.map((a) => (a.code === null ? 1 : 0)));
      items = answers.map((a) => ({
        id: a.task.id,
        correct: a.score.status === 'passed',
        score: a.score.status === 'passed' ? 1 : 0,
        output: a.reply,
        target: a.score.reason,
      }));
    } else metrics[`pass1.${set.id}`] = pass;
  }
  return { identity: evalIdentity(cfg), metrics, items };
}
