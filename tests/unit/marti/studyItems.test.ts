/**
 * The MARTI study's per-problem pieces (issue 17): worlds are first-operation families, the chance baseline is a
 * seeded share of random generator programs that pass, and the study's parts and claims follow the two-level rule
 * (seeds and problems must agree) on constructed parts where the answer is known.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_TASK_SPEC, generateTasks } from '../../../engine/marti/tasks/generator';
import { evaluateProgram } from '../../../engine/marti/tasks/scoring';
import { martiWorld, opFamily, randomProgramChance } from '../../study/martiItems';
import { armVerdict, claimsTableLines, partSchema, type Part } from '../../study/martiReport';

const spec = { ...DEFAULT_TASK_SPEC, minOps: 1, maxOps: 2 };

describe('MARTI problems: worlds and chance', () => {
  it('a problem’s world is its first operation’s family', () => {
    expect(opFamily('above3')).toBe('above');
    expect(opFamily('evens')).toBe('evens');
    const tasks = generateTasks('heldout', 1, 64, spec);
    for (const t of tasks) expect(martiWorld(t)).toBe(t.ops[0]!.replace(/\d+$/, ''));
    expect(new Set(tasks.map(martiWorld)).size).toBeGreaterThanOrEqual(6);
  });

  it('chance is a seeded share of random programs that pass, small but not zero; a task’s own target passes it', () => {
    const tasks = generateTasks('heldout', 1, 64, spec);
    const c = randomProgramChance(tasks, spec, { programs: 120 });
    expect(randomProgramChance(tasks, spec, { programs: 120 })).toEqual(c);
    expect(c.every((x) => x >= 0 && x <= 1)).toBe(true);
    const m = c.reduce((a, b) => a + b, 0) / c.length;
    expect(m).toBeGreaterThan(0);
    expect(m).toBeLessThan(0.1);
    // the scoring chance uses: a problem's own target passes all its private tests
    const t = tasks[0]!;
    expect(evaluateProgram(t.target, t).privateScore).toBe(1);
  });
});

/** A part whose trained seeds solve `solved(seed, world, item)` of 8 worlds × 6 problems. */
function part(arm: string, seeds: number, solved: (seed: number, w: number, i: number) => boolean): Part {
  const itemIds: string[] = [];
  const worlds: string[] = [];
  for (let w = 0; w < 8; w++) {
    for (let i = 0; i < 6; i++) {
      itemIds.push(`p${w}-${i}`);
      worlds.push(`w${w}`);
    }
  }
  const seedItems = Array.from({ length: seeds }, (_, s) => ({
    pass1: itemIds.map((_, k) => (solved(s, Math.floor(k / 6), k % 6) ? 1 : 0)),
  }));
  const means = seedItems.map((x) => x.pass1.reduce<number>((a, b) => a + b, 0) / itemIds.length);
  return partSchema.parse({
    arm,
    cmd: 'constructed',
    steps: 1,
    seeds,
    items: itemIds.length,
    backend: 'none',
    machine: 'none',
    minutes: 0,
    base: { name: 'base', metrics: { pass1: [0.2] }, seconds: [0] },
    trained: { name: arm, metrics: { pass1: means }, seconds: [] },
    itemIds,
    worlds,
    chance: itemIds.map(() => 0.01),
    baseItems: { pass1: itemIds.map((_, k) => (k % 6 === 0 ? 1 : 0)) },
    seedItems,
  });
}

describe('MARTI study claims on constructed parts', () => {
  // arm "hi" solves problems 0–2 of every world (plus one more on odd seeds), "lo" problems 0–1 (plus one on odd seeds)
  const hi = (n: number) => part('marti-hetero-bases', n, (s, _w, i) => i < 3 + (s % 2));
  const lo = (n: number) => part('marti-homo', n, (s, _w, i) => i < 2 + (s % 2));

  it('holds when seeds and problems both reject, and is inconclusive when two seeds cannot', () => {
    const five = armVerdict(hi(5), lo(5), 'pass1');
    expect(five.result.verdict).toBe('holds');
    expect(five.result.test).toMatch(/^seeds: exact permutation test .*; problems: exact sign-flip test over worlds/);
    const two = armVerdict(hi(2), lo(2), 'pass1');
    // problems alone would reject (every world gains one problem), but 2 vs 2 seeds cannot reach α
    expect(two.result.test).toMatch(/problems: .*one-sided p = 0\.004/);
    expect(two.result.verdict).toBe('inconclusive');
    expect(armVerdict(lo(5), hi(5), 'pass1').result.verdict).toBe('does not hold');
  });

  it('the claims table has a row for the comparison, for each arm against its base and against chance', () => {
    const lines = claimsTableLines([hi(5), lo(5)]);
    const row = (start: string) => lines.find((l) => l.startsWith(`| ${start}`));
    expect(row('Heterogeneous from different bases beats homogeneous (held-out pass@1)')).toMatch(/\*\*holds\*\*/);
    expect(row('marti-homo beats its base on held-out pass@1')).toMatch(/\*\*holds\*\*/);
    expect(row('marti-hetero-bases beats a random program')).toMatch(/\*\*holds\*\*/);
    expect(row('Heterogeneous beats homogeneous beats single')).toMatch(/not measurable here/);
  });

  it('states the ladder once per base, from the parts of arms trained from another base', () => {
    const at = (p: Part, arm: string): Part => ({ ...p, arm });
    const lines = claimsTableLines([
      at(lo(5), 'marti-single@base-tiny-s1'),
      at(hi(5), 'marti-homo@base-tiny-s1'),
      at(lo(5), 'marti-hetero@base-tiny-s1'),
    ]);
    const ladder = lines.filter((l) => l.startsWith('| Heterogeneous beats homogeneous beats single'));
    expect(ladder).toHaveLength(1);
    // homo > single holds, hetero > homo is rejected against: the ordering does not hold
    expect(ladder[0]).toMatch(/^\| [^|]*, from base-tiny-s1 \| \*\*does not hold\*\*/);
  });

  it('refuses a part whose per-problem arrays do not line up', () => {
    const p = hi(2);
    expect(() => partSchema.parse({ ...p, chance: p.chance!.slice(1) })).toThrow(/one per problem/);
  });
});
