/**
 * Single well-typed edits of an op chain: the "random fix" of a refining agent in the repair probe (tests/study/repairProbe.ts) and
 * the wrong parents of the pretraining corpus's refine examples (corpus.ts). An edit keeps the chain's types lined up:
 * change a parameter, replace an op by another with the same input and output types, delete or insert a
 * type-preserving op, or swap two neighbouring type-preserving ops.
 */
import type { Rng } from '../../random/prng';
import { OPS, type OpInstance, type TaskType } from './ops';

const EDIT_KINDS = ['param', 'replace', 'delete', 'insert', 'swap'] as const;

function typesAlong(start: TaskType, chain: readonly OpInstance[]): TaskType[] {
  const types = [start];
  for (const o of chain) types.push(o.spec.to);
  return types;
}

function pick<T>(rng: Rng, xs: readonly T[]): T | undefined {
  return xs.length === 0 ? undefined : xs[rng.int(xs.length)];
}

function drawParam(rng: Rng, o: OpInstance['spec']): number | string {
  return o.params.length === 0 ? 0 : o.params[rng.int(o.params.length)]!;
}

/** One random edit of `chain` (input type `start`); null when 50 tries found none (never for the world's chains). */
export function mutateChain(rng: Rng, start: TaskType, chain: readonly OpInstance[]): OpInstance[] | null {
  const types = typesAlong(start, chain);
  for (let tries = 0; tries < 50; tries++) {
    const kind = EDIT_KINDS[rng.int(EDIT_KINDS.length)]!;
    const i = rng.int(chain.length);
    const o = chain[i]!;
    const out = [...chain];
    switch (kind) {
      case 'param': {
        if (o.spec.params.length < 2) continue;
        const param = drawParam(rng, o.spec);
        if (param === o.param) continue;
        out[i] = { spec: o.spec, param };
        return out;
      }
      case 'replace': {
        const spec = pick(
          rng,
          OPS.filter((s) => s.from === o.spec.from && s.to === o.spec.to && s.name !== o.spec.name),
        );
        if (spec === undefined) continue;
        out[i] = { spec, param: drawParam(rng, spec) };
        return out;
      }
      case 'delete':
        if (chain.length < 2 || o.spec.from !== o.spec.to) continue;
        out.splice(i, 1);
        return out;
      case 'insert': {
        const at = rng.int(chain.length + 1);
        const t = types[at]!;
        const spec = pick(
          rng,
          OPS.filter((s) => s.from === t && s.to === t),
        );
        if (spec === undefined) continue;
        out.splice(at, 0, { spec, param: drawParam(rng, spec) });
        return out;
      }
      case 'swap': {
        if (i + 1 >= chain.length) continue;
        const a = chain[i]!;
        const b = chain[i + 1]!;
        if (a.spec.from !== a.spec.to || b.spec.from !== b.spec.to || a.spec.from !== b.spec.from) continue;
        if (a.spec.name === b.spec.name && a.param === b.param) continue;
        out[i] = b;
        out[i + 1] = a;
        return out;
      }
    }
  }
  return null;
}
