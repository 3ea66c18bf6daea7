/**
 * The parameter sets of a `martipy` run (trainer.ts): which set each agent writes to and trains (engine/marti/team.ts's
 * rule: `single` one set 'policy', `homogeneous` one set 'shared', `heterogeneous` one set per agent), the real models
 * they run on (the run's base, or an agent's own), and each set's LoRA adapters, switched onto its base before the set
 * writes or learns, with the set's Adam over what it trains. A checkpoint keeps the first set's adapters at its top and
 * every other set's in `agent-<id>/`, each in PEFT's layout.
 */
import path from 'node:path';
import { UserError } from '../../base/userError';
import type { CheckpointContents } from '../../model/formats/checkpoint';
import type { LlamaModel } from '../../model/llama';
import { LoraAdapters } from '../../model/lora/loraAdapters';
import { adaptersFromPeft, readPeftAdapter } from '../../model/lora/peftAdapter';
import { chatParts, loadRealModel, loadRealTokenizer, realModelPath, type RealModel } from '../../model/realModel';
import { InProcessChatPolicy, type ChatPolicy } from '../../policy/chatPolicy';
import { Rng } from '../../random/prng';
import type { Adam } from '../../rl/adam';
import { configuredAdam } from '../../training/configuredTraining';
import { teamAgents } from '../team';
import type { MartipyConfig } from './trainConfig';

/** A parameter set: the base it runs on and what of it is trained (its adapters, or every weight when null). */
export interface ParamSet {
  id: string;
  real: RealModel;
  lora: LoraAdapters | null;
  opt: Adam;
  updates: number;
}

/** The agents of the config's team with the parameter set each writes to and trains (engine/marti/team.ts's rule). */
export function teamOf(cfg: MartipyConfig): { id: string; rolePrompt: string; paramId: string; model?: string }[] {
  return teamAgents(cfg.team.configuration, cfg.team.agents);
}

export function paramIdsOf(cfg: MartipyConfig): string[] {
  return [...new Set(teamOf(cfg).map((a) => a.paramId))];
}

/** Switches a set's adapters onto its base: what the base computes from now on is this set's policy. */
export function activate(set: Pick<ParamSet, 'real' | 'lora'>): LlamaModel {
  set.real.model.lora = set.lora;
  return set.real.model;
}

/** A set's chat policy: its adapters switched in before each batch of chats. */
export function setPolicy(set: ParamSet): ChatPolicy {
  const inner = new InProcessChatPolicy(set.real);
  return {
    label: `${inner.label}:${set.id}`,
    reply(chats, sampling) {
      activate(set);
      return inner.reply(chats, sampling);
    },
  };
}

/** Saved beside the streams: each set's update count (the dropout counters ride with their adapters). */
export interface SavedState {
  paramSets?: { id: string; updates: number; dropoutSeed?: number; dropoutCalls?: number }[];
}

export const agentDir = (id: string) => `agent-${id}`;
export const AGENT_OPTIMIZER = 'optimizer.safetensors';

/** The base model path of a set: its agent's own, else the run's. */
export function baseOf(cfg: MartipyConfig, setId: string): string {
  return teamOf(cfg).find((a) => a.paramId === setId)?.model ?? cfg.model.path;
}

/** Loads each distinct base once: the run's model and, for heterogeneous teams, the agents' own. */
export async function loadBases(cfg: MartipyConfig, main?: LlamaModel): Promise<Map<string, RealModel>> {
  const bases = new Map<string, RealModel>();
  for (const spec of new Set(paramIdsOf(cfg).map((id) => baseOf(cfg, id)))) {
    const where = await realModelPath(spec, spec === cfg.model.path ? 'model.path' : 'team.agents[].model');
    if (spec === cfg.model.path && main) {
      const { tokenizer, chat } = await loadRealTokenizer(where);
      bases.set(spec, { path: where, model: main, tokenizer, chat, ...chatParts(tokenizer, chat) });
    } else bases.set(spec, await loadRealModel(where));
  }
  return bases;
}

/**
 * The parameter sets: fresh adapters (the first set from the seed's 'lora' stream, as chatgrpo draws them; others from
 * 'lora-<id>'), or a checkpoint's, with each set's Adam over what it trains.
 */
export async function buildSets(cfg: MartipyConfig, from?: CheckpointContents): Promise<ParamSet[]> {
  const bases = await loadBases(cfg, from?.model);
  const saved = (from?.trainerState as SavedState | undefined)?.paramSets ?? [];
  const sets: ParamSet[] = [];
  for (const [i, id] of paramIdsOf(cfg).entries()) {
    const real = bases.get(baseOf(cfg, id))!;
    let lora: LoraAdapters | null = null;
    if (cfg.model.lora) {
      if (from) {
        const dir = i === 0 ? from.dir : path.join(from.dir, agentDir(id));
        lora = adaptersFromPeft(real.model.config, await readPeftAdapter(dir));
        const s = saved.find((p) => p.id === id);
        if (typeof s?.dropoutSeed !== 'number' || typeof s.dropoutCalls !== 'number') {
          lora.dispose();
          throw new UserError(
            `${from.dir}/trainer_state.json: set ${id}'s LoRA dropout state is missing; cannot resume`,
          );
        }
        lora.dropoutSeed = s.dropoutSeed;
        lora.dropoutCalls = s.dropoutCalls;
      } else {
        lora = LoraAdapters.create(
          real.model.config,
          cfg.model.lora,
          new Rng(cfg.seed).split(i ? `lora-${id}` : 'lora'),
        );
      }
    }
    const set = { id, real, lora, updates: saved.find((p) => p.id === id)?.updates ?? 0 };
    sets.push({ ...set, opt: configuredAdam(cfg, activate(set)) });
  }
  return sets;
}
