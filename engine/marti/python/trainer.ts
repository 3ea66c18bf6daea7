/**
 * `martipy` (issues 30 and 31, item 6): MARTI-MARS² trained on Python with a real model. A step draws distinct
 * generated training problems, grows one AB-MCTS tree per problem with the team (pythonTrees.ts: the same selection,
 * prompts, sandbox scoring and feedback as `mars-lab code tree`), makes every tree one GRPO group (z-scores of its
 * nodes' rewards, treeAdvantage.ts) and updates each parameter set on the nodes its agents wrote: the reply's tokens
 * after the chat's rendered prompt, with the sampler's log-probabilities as the behaviour policy.
 *
 * Parameter sets (trainConfig.ts): one for `single` and `homogeneous` (LoRA adapters or every weight); one LoRA adapter
 * set per agent for `heterogeneous`, all on the run's base or on an agent's own base, switched in before the agent
 * writes and before its update. A tree whose nodes all scored the same has advantage 0 everywhere: it is recorded and
 * counted (zeroSignalTrees) but not passed to the update, whose gradient it would not move (it would only dilute the
 * token mean and cost a backward pass); so is a node longer than task.maxTrainTokens (overlongSkipped), whose backward
 * pass the backend could not hold.
 *
 * A checkpoint holds the base (model.safetensors, unchanged under LoRA), the first set's adapters in PEFT's layout at
 * the top (what `model merge` and PEFT read), every other set's in `agent-<id>/` (PEFT's layout too) with its optimiser
 * state, and the streams; search and token streams are split from the seed by step, so a resumed run continues exactly.
 * Evaluation is greedy pass@1 of each set on the held-out task file's first eval.items problems.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../../base/userError';
import type { CheckpointContents } from '../../model/formats/checkpoint';
import { encodeSafetensors } from '../../model/formats/safetensors';
import type { LlamaModel } from '../../model/llama';
import { adaptersFromPeft, peftAdapterFiles, readPeftAdapter } from '../../model/lora/peftAdapter';
import { loadRealModel, realModelPath } from '../../model/realModel';
import { Rng } from '../../random/prng';
import type { CodeTreeRecord } from '../../records/codeTree';
import { RECORD_VERSION } from '../../records/version';
import { policyUpdate, updateMetrics, type PolicyUpdateStats } from '../../rl/policyUpdate';
import type { Sample } from '../../rl/sample';
import { configuredUpdate, restoreStreams, saveStreams } from '../../training/configuredTraining';
import { readOptimizerFile, resumePoint } from '../../training/resumeChecks';
import type { Algorithm, EvalResult, StepOutput, Trainer, TrainerSnapshot } from '../../training/trainer';
import { makeSearchConfig, nonRootNodes } from '../search/abmcts';
import { treeAdvantages } from '../treeAdvantage';
import { treeLines } from './pythonTreeLines';
import { growPythonTrees, type PythonAgent, type PythonTree, type SandboxContext } from './pythonTrees';
import type { MartipyConfig } from './trainConfig';
import { evalIdentity, evaluateSets, martipyMemoryPlan, sandboxOf, trainPoolOf } from './trainEval';
import {
  activate,
  AGENT_OPTIMIZER,
  agentDir,
  baseOf,
  buildSets,
  loadBases,
  paramIdsOf,
  setPolicy,
  teamOf,
  type ParamSet,
  type SavedState,
} from './trainSets';
import type { CodeTask } from '../../code/tasks/taskFile';

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

interface Streams {
  problems: Rng;
  minibatch: Rng;
}
const STREAMS = ['problems', 'minibatch'] as const;

class MartipyTrainer implements Trainer {
  constructor(
    private readonly cfg: MartipyConfig,
    private readonly pool: readonly CodeTask[],
    private readonly sets: ParamSet[],
    private readonly streams: Streams,
    private readonly sandbox: SandboxContext,
    public step: number,
    /** Training every weight with rl.klCoef > 0: a frozen copy of the base. */
    private readonly frozen: LlamaModel | null,
  ) {}

  /** Distinct problems for this step, drawn from the pool (a tree is keyed by its problem's id). */
  private pickProblems(): CodeTask[] {
    const idx = this.pool.map((_, i) => i);
    const n = Math.min(this.cfg.search.problemsPerStep, idx.length);
    for (let i = 0; i < n; i++) {
      const j = i + this.streams.problems.int(idx.length - i);
      [idx[i], idx[j]] = [idx[j]!, idx[i]!];
    }
    return idx.slice(0, n).map((i) => this.pool[i]!);
  }

  private agents(): PythonAgent[] {
    const byId = new Map(this.sets.map((s) => [s.id, s]));
    return teamOf(this.cfg).map((a) => ({
      id: a.id,
      rolePrompt: a.rolePrompt,
      policy: setPolicy(byId.get(a.paramId)!),
    }));
  }

  async trainStep(): Promise<StepOutput> {
    const { cfg } = this;
    const team = teamOf(cfg);
    const paramOf = new Map(team.map((a) => [a.id, a.paramId]));
    const picked = this.pickProblems();
    const root = new Rng(cfg.seed);
    const { trees, timing } = await growPythonTrees({
      tasks: picked,
      agents: this.agents(),
      search: makeSearchConfig({
        agents: team.map((a) => a.id),
        nodesPerTree: cfg.search.nodesPerTree,
        posterior: cfg.search.posterior,
        depthWeighting: cfg.search.tplus,
      }),
      feedback: cfg.search.tplus ? 'rich' : 'plain',
      rewardMode: cfg.task.rewardMode,
      maxNewTokens: cfg.task.maxNewTokens,
      temperature: cfg.sampler.temperature,
      topP: cfg.sampler.topP,
      searchRng: root.split(`search-${this.step}`),
      tokenRng: root.split(`tokens-${this.step}`),
      sandbox: this.sandbox,
    });
    const groups = trees.map((t) => treeAdvantages(t, { eps: cfg.rl.zscoreEps, stdMode: cfg.rl.stdMode }));
    const buffers = new Map<string, Sample[]>(this.sets.map((s) => [s.id, []]));
    let overlong = 0;
    trees.forEach((tree, ti) => {
      if (groups[ti]!.degenerate) return;
      const adv = new Map(groups[ti]!.nodes.map((n) => [n.nodeId, n]));
      for (const node of nonRootNodes(tree)) {
        const s = node.payload!.sample!;
        if (s.promptIds.length + s.ids.length > cfg.task.maxTrainTokens) {
          overlong++;
          continue;
        }
        const a = adv.get(node.id)!;
        buffers.get(paramOf.get(node.agentId!)!)!.push({
          role: 'node',
          groupId: tree.treeId,
          paramId: paramOf.get(node.agentId!)!,
          tokens: [...s.promptIds, ...s.ids],
          lossMask: [...s.promptIds.map(() => 0), ...s.ids.map(() => 1)],
          behaviourLogProbs: [...s.promptIds.map(() => 0), ...s.logProbs],
          reward: a.reward,
          advantage: a.advantage,
        });
      }
    });
    const u0 = performance.now();
    const stats = new Map<string, PolicyUpdateStats>();
    for (const set of this.sets) {
      const samples = buffers.get(set.id)!;
      if (!samples.length) continue;
      const model = activate(set);
      const reference = cfg.rl.klCoef > 0 ? (set.lora ? ('adapters-off' as const) : this.frozen!) : undefined;
      stats.set(
        set.id,
        await policyUpdate(model, set.opt, samples, {
          ...configuredUpdate(cfg, this.streams.minibatch, this.step),
          ...(reference ? { reference } : {}),
        }),
      );
      set.updates++;
    }
    const updateMs = performance.now() - u0;
    this.step++;
    const nodes = trees.flatMap((t) => nonRootNodes(t));
    const metrics: Record<string, number> = {
      reward: mean(nodes.map((n) => n.score)),
      passShare: mean(nodes.map((n) => (n.privateScore === 1 ? 1 : 0))),
      treesSolved: mean(trees.map((t) => (nonRootNodes(t).some((n) => n.privateScore === 1) ? 1 : 0))),
      firstNodePass: mean(trees.map((t) => (nonRootNodes(t)[0]?.privateScore === 1 ? 1 : 0))),
      refineShare: mean(nodes.map((n) => (n.parentId === 0 ? 0 : 1))),
      noCodeShare: mean(nodes.map((n) => (n.program === null ? 1 : 0))),
      zeroSignalTrees: mean(groups.map((g) => (g.degenerate ? 1 : 0))),
      overlongSkipped: overlong,
      replyTokens: mean(nodes.map((n) => n.payload!.replyTokens)),
      truncatedShare: mean(nodes.map((n) => (n.payload!.finish === 'stop' ? 0 : 1))),
      'timing.generationMs': timing.generationMs,
      'timing.testMs': timing.testMs,
      'timing.updateMs': updateMs,
    };
    if (team.length > 1) {
      for (const a of team) {
        const mine = nodes.filter((n) => n.agentId === a.id);
        metrics[`agentShare.${a.id}`] = nodes.length ? mine.length / nodes.length : 0;
        metrics[`agentReward.${a.id}`] = mean(mine.map((n) => n.score));
      }
    }
    for (const set of this.sets) {
      const st = stats.get(set.id);
      const key = this.sets.length > 1 ? `.${set.id}` : '';
      metrics[`agentStep${key}`] = set.updates;
      if (st) for (const [k, v] of Object.entries(updateMetrics(st))) metrics[`${k}${key}`] = v;
    }
    return {
      metrics,
      trajectories: treeRecords(trees, picked, groups),
      tokens: nodes.reduce((s, n) => s + n.payload!.sample!.promptIds.length + n.payload!.sample!.ids.length, 0),
    };
  }

  evaluate(): Promise<EvalResult> {
    return evaluateSets(this.cfg, this.sets, this.sandbox);
  }

  async snapshot(): Promise<TrainerSnapshot> {
    const main = this.sets[0]!;
    const files: Record<string, string | Uint8Array> = {};
    if (main.lora) Object.assign(files, await peftAdapterFiles(main.lora, this.cfg.model.path));
    for (const set of this.sets.slice(1)) {
      for (const [name, data] of Object.entries(await peftAdapterFiles(set.lora!, baseOf(this.cfg, set.id)))) {
        files[`${agentDir(set.id)}/${name}`] = data;
      }
      const o = await set.opt.exportState();
      files[`${agentDir(set.id)}/${AGENT_OPTIMIZER}`] = encodeSafetensors(o.tensors, { step: String(o.step) });
    }
    const state: SavedState & Record<string, unknown> = {
      step: this.step,
      rng: saveStreams(this.streams),
      paramSets: this.sets.map((s) => ({
        id: s.id,
        updates: s.updates,
        ...(s.lora ? { dropoutSeed: s.lora.dropoutSeed, dropoutCalls: s.lora.dropoutCalls } : {}),
      })),
    };
    activate(main);
    return { model: main.real.model, optimizer: await main.opt.exportState(), state, files };
  }

  dispose(): void {
    const bases = new Set<LlamaModel>();
    for (const s of this.sets) {
      s.lora?.dispose();
      s.opt.dispose();
      bases.add(s.real.model);
    }
    for (const m of bases) {
      m.lora = null;
      m.dispose();
    }
    this.frozen?.dispose();
  }
}

/** A step's trees as `code.tree` records (engine/records/codeTree.ts), each node with its advantage. */
function treeRecords(
  trees: readonly PythonTree[],
  tasks: readonly CodeTask[],
  groups: readonly ReturnType<typeof treeAdvantages>[],
): CodeTreeRecord[] {
  return treeLines(trees, tasks).map((line, i) => {
    const adv = new Map(groups[i]!.nodes.map((n) => [n.nodeId, n.advantage]));
    return {
      kind: 'code.tree',
      version: RECORD_VERSION,
      ...line,
      nodes: line.nodes.map((n) => ({ ...n, advantage: adv.get(n.id) ?? 0 })),
    };
  });
}

async function createTrainer(cfg: MartipyConfig, from?: CheckpointContents): Promise<MartipyTrainer> {
  const problem = (await martipyMemoryPlan(cfg))?.problem;
  if (problem) throw new UserError(problem);
  const pool = await trainPoolOf(cfg);
  const sandbox = await sandboxOf(cfg);
  const resumed = from ? resumePoint(from) : null;
  const sets = await buildSets(cfg, from);
  try {
    if (resumed) {
      sets[0]!.opt.importState(resumed.optimizer);
      for (const set of sets.slice(1)) {
        set.opt.importState(await readOptimizerFile(path.join(from!.dir, agentDir(set.id), AGENT_OPTIMIZER)));
      }
    }
    const streams = resumed
      ? restoreStreams(resumed.state, STREAMS)
      : {
          problems: new Rng(cfg.task.trainSeed).split('train-problems'),
          minibatch: new Rng(cfg.seed).split('minibatch'),
        };
    const frozen =
      cfg.rl.klCoef > 0 && !cfg.model.lora
        ? (await loadRealModel(await realModelPath(cfg.model.path, 'model.path'))).model
        : null;
    return new MartipyTrainer(cfg, pool, sets, streams, sandbox, resumed?.state.step ?? 0, frozen);
  } catch (err) {
    for (const s of sets) {
      s.lora?.dispose();
      s.opt.dispose();
    }
    throw err;
  }
}

export { createTrainer as createMartipyTrainer, paramIdsOf as martipyParamIds };

export const martipy: Algorithm<MartipyConfig> = {
  name: 'martipy',
  createTrainer,
  evalIdentity,
  async initialModel(cfg) {
    return (await loadRealModel(await realModelPath(cfg.model.path, 'model.path'))).model;
  },
  checkpointFiles() {
    return {};
  },
  async evaluate(cfg, model, checkpointDir) {
    const bases = await loadBases(cfg, model);
    const sets: Pick<ParamSet, 'id' | 'real' | 'lora'>[] = [];
    try {
      for (const [i, id] of paramIdsOf(cfg).entries()) {
        const real = bases.get(baseOf(cfg, id))!;
        const dir = checkpointDir && (i === 0 ? checkpointDir : path.join(checkpointDir, agentDir(id)));
        const lora =
          cfg.model.lora && dir && fs.existsSync(path.join(dir, 'adapter_config.json'))
            ? adaptersFromPeft(real.model.config, await readPeftAdapter(dir))
            : null;
        sets.push({ id, real, lora });
      }
      return await evaluateSets(cfg, sets, await sandboxOf(cfg));
    } finally {
      for (const s of sets) s.lora?.dispose();
      model.lora = null;
      for (const b of bases.values()) if (b.model !== model) b.model.dispose();
    }
  },
};
