import { describe, expect, it } from 'vitest';
import { applySet, applySets, InvalidSetError } from '../../../engine/runs/config/configOverrides';
import { runConfigJsonSchema } from '../../../engine/runs/config/configJsonSchema';
import {
  checkRunConfig,
  ConfigValidationError,
  parseRunConfig,
  type RunConfig,
  type SeqGrpoConfig,
} from '../../../engine/runs/config/configSchema';
import { UserError } from '../../../engine/base/userError';

/** The thrown error's message, or a failure when nothing was thrown. */
function errorOf(f: () => unknown): ConfigValidationError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigValidationError);
    return err as ConfigValidationError;
  }
  throw new Error('expected a ConfigValidationError, but the config was accepted');
}

const messageFor = (input: unknown, source?: string) => errorOf(() => parseRunConfig(input, source)).message;

describe('run config schema: defaults', () => {
  it('fills every section of a partial config with the documented defaults', () => {
    const c = parseRunConfig({ algorithm: 'seqgrpo', rl: { lr: 3e-4 }, task: { kind: 'reverse' } });
    expect(c).toEqual({
      algorithm: 'seqgrpo',
      seed: 0,
      backend: 'auto',
      tags: [],
      notes: '',
      model: { size: 'tiny', initStd: 0.02, from: { kind: 'random' } },
      sampler: { temperature: 1, topP: 1 },
      rl: {
        loss: 'ppoToken',
        clipLow: 0.2,
        clipHigh: 0.2,
        klCoef: 0,
        entCoef: 0,
        tis: { enabled: false, cap: 2 },
        lr: 3e-4,
        schedule: { kind: 'constant' },
        gradClip: 1,
        epochs: 1,
        miniBatches: 1,
        zscoreEps: 1e-6,
        singleton: 'zero',
        stdMode: 'unbiased',
      },
      budget: { steps: 200 },
      pretrain: { steps: 300, lr: 1e-3, batch: 32 },
      eval: { every: 50, items: 64, temperature: 0, drawSeed: 0 },
      checkpoint: { every: 50, keep: 'all' },
      task: {
        kind: 'reverse',
        pretrainKind: 'copy',
        symbols: 6,
        length: 3,
        groupSize: 16,
        promptsPerStep: 1,
        trainSeed: 1,
        evalSeed: 2,
        heldoutFraction: 0.2,
      },
    } satisfies RunConfig);
  });

  it('fills defaults inside a partly given nested section and keeps what was given', () => {
    const c = parseRunConfig({ algorithm: 'seqgrpo', rl: { tis: { enabled: true }, schedule: { kind: 'cosine' } } });
    expect(c.rl.tis).toEqual({ enabled: true, cap: 2 });
    expect(c.rl.schedule).toEqual({ kind: 'cosine', warmupSteps: 0, minLr: 0 });
  });

  it('does not share default arrays between parses', () => {
    const a = parseRunConfig({ algorithm: 'seqgrpo' });
    a.tags.push('x');
    expect(parseRunConfig({ algorithm: 'seqgrpo' }).tags).toEqual([]);
  });

  it('accepts its own output again unchanged (run.json is re-read on resume)', () => {
    const c = parseRunConfig({
      algorithm: 'seqgrpo',
      model: { size: 'micro', hidden_size: 64 },
      checkpoint: { keep: 3 },
    });
    expect(parseRunConfig(JSON.parse(JSON.stringify(c)))).toEqual(c);
  });

  it('accepts a checkpoint as the model source', () => {
    const c = parseRunConfig({
      algorithm: 'seqgrpo',
      model: { from: { kind: 'checkpoint', path: 'runs/a/checkpoints/100' } },
    }) as SeqGrpoConfig;
    expect(c.model.from).toEqual({ kind: 'checkpoint', path: 'runs/a/checkpoints/100' });
  });
});

describe('run config schema: error messages', () => {
  it('an enum names the path, the allowed values and the received value', () => {
    expect(messageFor({ algorithm: 'seqgrpo', rl: { loss: 'ppo' } })).toBe(
      'config: rl.loss: expected one of "ppoToken" | "gspo" — received "ppo"',
    );
  });

  it('a range names the bound and the received value', () => {
    expect(messageFor({ algorithm: 'seqgrpo', rl: { lr: -1 } })).toBe('config: rl.lr: must be > 0 — received -1');
    expect(messageFor({ algorithm: 'seqgrpo', task: { symbols: 65 } })).toBe(
      'config: task.symbols: must be ≤ 64 — received 65',
    );
    expect(messageFor({ algorithm: 'seqgrpo', seed: 2 ** 32 })).toBe(
      'config: seed: must be ≤ 4294967295 — received 4294967296',
    );
    expect(messageFor({ algorithm: 'seqgrpo', task: { heldoutFraction: 1 } })).toBe(
      'config: task.heldoutFraction: must be < 1 — received 1',
    );
  });

  it('a wrong type names the expected type and the received value', () => {
    expect(messageFor({ algorithm: 'seqgrpo', budget: { steps: 2.5 } })).toBe(
      'config: budget.steps: expected an integer from 1 to 10000000 — received 2.5',
    );
    expect(messageFor({ algorithm: 'seqgrpo', task: { length: '3' } })).toBe(
      'config: task.length: expected an integer from 1 to 16 — received "3"',
    );
    expect(messageFor({ algorithm: 'seqgrpo', rl: { lr: '1e-4' } })).toBe(
      'config: rl.lr: expected a number — received "1e-4"',
    );
    expect(messageFor({ algorithm: 'seqgrpo', rl: { tis: { enabled: 'yes' } } })).toBe(
      'config: rl.tis.enabled: expected true or false — received "yes"',
    );
    expect(messageFor({ algorithm: 'seqgrpo', tags: 'a' })).toBe('config: tags: expected a list — received "a"');
    expect(messageFor({ algorithm: 'seqgrpo', eval: null })).toBe('config: eval: expected an object — received null');
  });

  it('names the source it is given', () => {
    expect(messageFor({ algorithm: 'seqgrpo', rl: { lr: 0 } }, 'runs/x/run.json')).toBe(
      'runs/x/run.json: rl.lr: must be > 0 — received 0',
    );
  });

  it('refuses a group of one with the §2.9 reason', () => {
    expect(messageFor({ algorithm: 'seqgrpo', task: { groupSize: 1 } })).toBe(
      'config: task.groupSize: must be ≥ 2 (a group of one has no baseline; docs/algorithms.md §2.9) — received 1',
    );
  });

  it('refuses equal training and evaluation seeds, saying why', () => {
    expect(messageFor({ algorithm: 'seqgrpo', task: { trainSeed: 7, evalSeed: 7 } })).toBe(
      'config: task.evalSeed: must differ from task.trainSeed (7) so evaluation items are never trained on — received 7',
    );
    // The defaults differ, so only one of them needs to be given to collide.
    expect(messageFor({ algorithm: 'seqgrpo', task: { evalSeed: 1 } })).toMatch(
      /^config: task\.evalSeed: must differ from task\.trainSeed \(1\)/,
    );
  });

  it('names an unknown field with the allowed ones and the nearest', () => {
    const m = messageFor({ algorithm: 'seqgrpo', rl: { lrr: 1e-3 } });
    expect(m).toMatch(
      /^config: rl\.lrr: unknown field \(allowed: loss, clipLow, clipHigh, klCoef, entCoef, tis, lr, schedule, gradClip, /,
    );
    expect(m).toContain('did you mean "lr"?');
    expect(messageFor({ algorithm: 'seqgrpo', budgett: {} })).toMatch(
      /^config: budgett: unknown field \(allowed: algorithm, seed, backend, .*task\); did you mean "budget"\?$/,
    );
  });

  it('finds the allowed fields inside a union member chosen by its tag', () => {
    const m = messageFor({ algorithm: 'seqgrpo', rl: { schedule: { kind: 'cosine', minlr: 0 } } });
    expect(m).toBe(
      'config: rl.schedule.minlr: unknown field (allowed: kind, warmupSteps, minLr); did you mean "minLr"?',
    );
  });

  it('names a missing or unknown algorithm and a missing field', () => {
    expect(messageFor({})).toBe(
      'config: algorithm: expected one of "seqgrpo" | "mars" | "marti" | "chatgrpo" | "martipy" — missing',
    );
    expect(messageFor({ algorithm: 'grpo' })).toBe(
      'config: algorithm: expected one of "seqgrpo" | "mars" | "marti" | "chatgrpo" | "martipy" — received "grpo"',
    );
    expect(messageFor({ algorithm: 'seqgrpo', rl: { schedule: { kind: 'linearWarmup' } } })).toBe(
      'config: rl.schedule.warmupSteps: expected an integer from 0 to 10000000 — missing',
    );
    expect(messageFor({ algorithm: 'seqgrpo', model: { from: { kind: 'file' } } })).toBe(
      'config: model.from.kind: expected one of "random" | "checkpoint" — received "file"',
    );
  });

  it('says what a config that is not an object should be', () => {
    expect(messageFor(42)).toBe('config: expected a JSON object — received 42');
    expect(messageFor(undefined)).toBe('config: expected a JSON object — missing');
  });

  it('truncates a long received value', () => {
    const m = messageFor({ algorithm: 'seqgrpo', model: { size: 'x'.repeat(500) } });
    expect(m.length).toBeLessThan(200);
    expect(m).toMatch(/— received "x+…$/);
  });

  it('lists every issue, one per line, and exposes them for inline display', () => {
    const err = errorOf(() =>
      parseRunConfig({ algorithm: 'seqgrpo', rl: { loss: 'ppo', lr: 0 }, budget: { steps: 0 }, extra: 1 }),
    );
    expect(err).toBeInstanceOf(UserError);
    expect(err.message.split('\n')).toHaveLength(4);
    expect(err.issues.map((i) => i.path).sort()).toEqual(['budget.steps', 'extra', 'rl.loss', 'rl.lr']);
    expect(err.issues.find((i) => i.path === 'rl.lr')!.message).toBe('must be > 0 — received 0');
    const check = checkRunConfig({ algorithm: 'seqgrpo', rl: { lr: 0 } });
    expect(check.success).toBe(false);
  });

  it('checks across fields: schedule bounds and minibatches', () => {
    expect(messageFor({ algorithm: 'seqgrpo', rl: { lr: 1e-3, schedule: { kind: 'cosine', minLr: 1e-2 } } })).toBe(
      'config: rl.schedule.minLr: must be ≤ rl.lr (0.001): the cosine decays from rl.lr down to minLr — received 0.01',
    );
    expect(
      messageFor({
        algorithm: 'seqgrpo',
        budget: { steps: 10 },
        rl: { schedule: { kind: 'linearWarmup', warmupSteps: 20 } },
      }),
    ).toBe(
      'config: rl.schedule.warmupSteps: must be ≤ budget.steps (10): a longer warm-up never reaches rl.lr — received 20',
    );
    expect(
      messageFor({ algorithm: 'seqgrpo', task: { groupSize: 4, promptsPerStep: 2 }, rl: { miniBatches: 9 } }),
    ).toMatch(/^config: rl\.miniBatches: must be ≤ task\.groupSize × task\.promptsPerStep \(8\)/);
    expect(
      parseRunConfig({ algorithm: 'seqgrpo', task: { groupSize: 4, promptsPerStep: 2 }, rl: { miniBatches: 8 } }).rl
        .miniBatches,
    ).toBe(8);
  });

  it('refuses architecture overrides that do not fit together', () => {
    expect(messageFor({ algorithm: 'seqgrpo', model: { size: 'tiny', num_attention_heads: 3 } })).toMatch(
      /^config: model: inconsistent architecture: num_attention_heads \(3\) must be a multiple of num_key_value_heads \(2\)/,
    );
    expect(
      (parseRunConfig({ algorithm: 'seqgrpo', model: { size: 'micro', num_attention_heads: 2 } }) as SeqGrpoConfig)
        .model.num_attention_heads,
    ).toBe(2);
  });

  it('accepts "all" or a positive count of checkpoints to keep, and says so otherwise', () => {
    expect(parseRunConfig({ algorithm: 'seqgrpo', checkpoint: { keep: 3 } }).checkpoint.keep).toBe(3);
    expect(messageFor({ algorithm: 'seqgrpo', checkpoint: { keep: 'some' } })).toBe(
      'config: checkpoint.keep: expected "all" or an integer ≥ 1 — received "some"',
    );
    expect(messageFor({ algorithm: 'seqgrpo', checkpoint: { keep: 0 } })).toMatch(
      /^config: checkpoint\.keep: .*1.* — received 0$/,
    );
  });
});

describe('--set overrides', () => {
  const base = { algorithm: 'seqgrpo', rl: { lr: 1e-4, loss: 'gspo' } };

  it('sets nested values, parsing JSON when it parses', () => {
    const c = applySets(base, [
      'rl.lr=3e-4',
      'task.groupSize=8',
      'rl.tis.enabled=true',
      'tags=["a","b"]',
      'model.from={"kind":"checkpoint","path":"x"}',
    ]);
    expect(c).toEqual({
      algorithm: 'seqgrpo',
      rl: { lr: 3e-4, loss: 'gspo', tis: { enabled: true } },
      task: { groupSize: 8 },
      tags: ['a', 'b'],
      model: { from: { kind: 'checkpoint', path: 'x' } },
    });
    expect(parseRunConfig(c).rl.lr).toBe(3e-4);
  });

  it('keeps a value that is not JSON as a string, including one with = in it', () => {
    expect(applySet(base, 'task.kind=reverse')).toMatchObject({ task: { kind: 'reverse' } });
    expect(applySet(base, 'notes=a=b c')).toMatchObject({ notes: 'a=b c' });
    expect(applySet(base, 'notes=')).toMatchObject({ notes: '' });
    expect(applySet(base, 'notes="7"')).toMatchObject({ notes: '7' });
    expect(applySet(base, 'notes=7')).toMatchObject({ notes: 7 });
  });

  it('does not modify its input and lets a later --set win', () => {
    const before = JSON.stringify(base);
    const c = applySets(base, ['rl.lr=1', 'rl.lr=2']);
    expect(JSON.stringify(base)).toBe(before);
    expect(c).toMatchObject({ rl: { lr: 2 } });
  });

  it('sets list elements by index', () => {
    expect(applySet({ tags: ['a', 'b'] }, 'tags.1=c')).toEqual({ tags: ['a', 'c'] });
    expect(() => applySet({ tags: ['a'] }, 'tags.x=c')).toThrow(/tags is a list/);
  });

  it('refuses malformed assignments with a UserError naming the flag', () => {
    for (const [a, re] of [
      ['rl.lr', /^--set rl\.lr: expected path=value/],
      ['=3', /^--set =3: the field path before '=' is empty/],
      ['rl..lr=3', /^--set rl\.\.lr=3: .*empty segment/],
      ['__proto__.x=1', /is not a config field/],
      ['model.size.x=1', /^--set model\.size\.x=1: model\.size is "tiny", not an object/],
    ] as const) {
      let caught: unknown;
      try {
        applySet({ model: { size: 'tiny' } }, a);
      } catch (err) {
        caught = err;
      }
      expect(caught, a).toBeInstanceOf(InvalidSetError);
      expect(caught).toBeInstanceOf(UserError);
      expect((caught as Error).message).toMatch(re);
    }
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it('is validated like the field itself: an invalid value gets the same path message', () => {
    expect(messageFor(applySet(base, 'rl.lr=-1'))).toBe('config: rl.lr: must be > 0 — received -1');
    expect(messageFor(applySet(base, 'task.kind=rev'))).toMatch(
      /^config: task\.kind: expected one of "copy" \| "reverse" .* — received "rev"$/,
    );
    expect(messageFor(applySet(base, 'rl.lrr=1'))).toMatch(/^config: rl\.lrr: unknown field/);
  });
});

describe('JSON Schema for the launch form', () => {
  type Node = Record<string, unknown>;
  const schema = runConfigJsonSchema() as Node;
  const member = (algorithm: string) =>
    (schema.oneOf as Node[]).find((m) => ((m.properties as Node).algorithm as Node).const === algorithm)!;

  /** Every property of every object anywhere in the schema, with its dotted path. */
  function properties(node: unknown, at = ''): Array<[string, Node]> {
    if (typeof node !== 'object' || node === null) return [];
    const n = node as Node;
    const out: Array<[string, Node]> = [];
    for (const [k, v] of Object.entries((n.properties as Record<string, Node>) ?? {})) {
      const p = at ? `${at}.${k}` : k;
      out.push([p, v], ...properties(v, p));
    }
    for (const key of ['oneOf', 'anyOf', 'allOf'] as const) {
      for (const b of (n[key] as unknown[]) ?? []) out.push(...properties(b, at));
    }
    if (n.items) out.push(...properties(n.items, `${at}[]`));
    return out;
  }

  it('is draft 2020-12, titled, and plain JSON', () => {
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.title).toBeTruthy();
    expect(JSON.parse(JSON.stringify(schema))).toEqual(schema);
  });

  it('switches on the algorithm discriminator', () => {
    expect(schema.discriminator).toEqual({ propertyName: 'algorithm' });
    const branches = schema.oneOf as Node[];
    expect(branches.length).toBeGreaterThanOrEqual(1);
    for (const b of branches) {
      expect(b.required).toContain('algorithm');
      expect(typeof ((b.properties as Node).algorithm as Node).const).toBe('string');
      expect(b.additionalProperties).toBe(false);
    }
    expect(member('seqgrpo')).toBeDefined();
  });

  it('shows defaults, ranges and choices', () => {
    const p = Object.fromEntries(properties(member('seqgrpo')));
    expect(p['rl.lr']).toMatchObject({ default: 1e-4, exclusiveMinimum: 0 });
    expect(p['task.groupSize']).toMatchObject({ default: 16, minimum: 2, type: 'integer' });
    expect(p['rl.loss']).toMatchObject({ default: 'ppoToken', enum: ['ppoToken', 'gspo'] });
    expect(p['backend']).toMatchObject({ default: 'auto' });
    expect(p['model.size']).toMatchObject({ default: 'tiny' });
    expect(p['model.size']!.enum as string[]).toContain('micro');
  });

  it('has a title and a description on every field, at every depth', () => {
    const all = properties(schema);
    expect(all.length).toBeGreaterThan(50);
    const missing = all
      .filter(([, v]) => typeof v.description !== 'string' || v.description.trim() === '')
      .map(([p]) => p);
    expect(missing).toEqual([]);
    const untitled = all.filter(([, v]) => typeof v.title !== 'string').map(([p]) => p);
    expect(untitled).toEqual([]);
  });

  it('returns a fresh copy each time', () => {
    const a = runConfigJsonSchema() as Node;
    a.title = 'changed';
    expect((runConfigJsonSchema() as Node).title).not.toBe('changed');
  });
});
