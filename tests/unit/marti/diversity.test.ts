import { describe, expect, it } from 'vitest';
import {
  agentSelectionEntropy,
  behaviouralDiversity,
  distinctCorrectSolutions,
  distinctProgramRatio,
  diversityNodesOf,
  diversityReport,
  entropy,
  normalizedTokenEditDistance,
  pairwiseEditDistance,
  passGap,
  tokenEditDistance,
  tokenEntropyFromLogProbs,
  tokenizeProgram,
  unigramEntropy,
  uniqueSolves,
  type DiversityNode,
} from '../../../engine/marti/diversity';
import { addNode, forceExpansion, makeSearchConfig, newTree } from '../../../engine/marti/search/abmcts';

const node = (
  problemId: string,
  agentId: string,
  program: string | null,
  privateScore = 0,
  publicScore = 0,
  id?: number,
): DiversityNode => ({
  problemId,
  agentId,
  program,
  privateScore,
  publicScore,
  id,
});

describe('token edit distance', () => {
  it('tokenizes identifiers, numbers, strings and single symbols, dropping whitespace', () => {
    expect(tokenizeProgram('map(x => x + 12)  |> "a b"')).toEqual([
      'map',
      '(',
      'x',
      '=',
      '>',
      'x',
      '+',
      '12',
      ')',
      '|',
      '>',
      '"a b"',
    ]);
    expect(tokenizeProgram('   ')).toEqual([]);
  });

  it('counts token edits, not character edits, and normalises by the longer length', () => {
    expect(tokenEditDistance(['a', 'b', 'c'], ['a', 'c'])).toBe(1);
    expect(tokenEditDistance(['foo'], ['bar'])).toBe(1); // 3 as characters
    expect(tokenEditDistance(['ab', 'c'], ['a', 'bc'])).toBe(2); // same characters, different tokens
    expect(normalizedTokenEditDistance(['a', 'b', 'c'], ['a', 'c'])).toBeCloseTo(1 / 3, 15);
    expect(normalizedTokenEditDistance([], [])).toBe(0);
    expect(normalizedTokenEditDistance(['x'], [])).toBe(1);
    // Many distinct tokens (> 32, the bit-parallel word size) still work.
    const long = Array.from({ length: 100 }, (_, i) => `t${i}`);
    expect(tokenEditDistance(long, [...long.slice(0, 50), 'new', ...long.slice(51)])).toBe(1);
  });
});

describe('diversity measures on hand-made program sets', () => {
  // p1: A writes "a b c" and "a b d", B writes "x y z". p2: A writes "q" only (no pair); B's program is unparsable.
  const nodes = [
    node('p1', 'A', 'a b c'),
    node('p1', 'A', 'a b d'),
    node('p1', 'B', 'x y z'),
    node('p2', 'A', 'q'),
    node('p2', 'B', null),
  ];

  it('mean pairwise edit distance within each agent, across agents and overall (pairs pooled, same problem only)', () => {
    const r = pairwiseEditDistance(nodes);
    expect(r.withinAgent.A).toBeCloseTo(1 / 3, 15); // "a b c" vs "a b d"
    expect(r.withinAgent.B).toBeNull(); // one parsable program: no pair
    expect(r.acrossAgents).toBe(1); // both A programs vs "x y z": 3 of 3 tokens differ
    expect(r.all).toBeCloseTo((1 / 3 + 1 + 1) / 3, 15); // p2 has no pair of programs
  });

  it('distinct-program ratio after canonicalising whitespace (or a given canonical form)', () => {
    const progs = [
      node('p', 'A', 'f  x'),
      node('p', 'A', 'f x'),
      node('p', 'B', 'g'),
      node('r', 'A', 'h'),
      node('r', 'B', 'h'),
    ];
    const r = distinctProgramRatio(progs);
    expect(r.perAgent.A).toBeCloseTo((1 / 2 + 1) / 2, 15); // p: 1 of 2; r: 1 of 1
    expect(r.perAgent.B).toBe(1);
    expect(r.all).toBeCloseTo((2 / 3 + 1 / 2) / 2, 15);
    const renamed = distinctProgramRatio([node('p', 'A', 'f x'), node('p', 'A', 'f y')], {
      canonical: (s) => s.replace(/[xy]/g, 'v'),
    });
    expect(renamed.all).toBe(1 / 2);
  });

  it('behavioural diversity counts distinct output signatures, so different programs with equal outputs count once', () => {
    const outputs: Record<string, string> = { 'a+1': '2,3', '1+a': '2,3', 'a*2': '2,4', 'a-1': '0,1' };
    const progs = [
      node('p', 'A', 'a+1'),
      node('p', 'A', '1+a'),
      node('p', 'B', 'a*2'),
      node('p', 'B', 'a-1'),
      node('p', 'B', null),
    ];
    const seen: string[] = [];
    const r = behaviouralDiversity(progs, (prog, n) => (seen.push(`${n.problemId}:${prog}`), outputs[prog]!));
    expect(r.perAgent.A).toBe(1 / 2);
    expect(r.perAgent.B).toBe(1);
    expect(r.all).toBe(3 / 4);
    expect(seen).toHaveLength(4); // one call per parsable program, with its problem available
  });

  it('distinct correct solutions per problem, per agent and overall', () => {
    const progs = [
      node('p1', 'A', 'a b', 1),
      node('p1', 'A', 'a  b', 1), // same after whitespace
      node('p1', 'B', 'c', 1),
      node('p1', 'B', 'd', 0),
      node('p2', 'A', 'e', 0),
      node('p2', 'B', 'f', 1),
    ];
    const r = distinctCorrectSolutions(progs);
    expect(r.all).toBe((2 + 1) / 2);
    expect(r.perAgent.A).toBe((1 + 0) / 2);
    expect(r.perAgent.B).toBe((1 + 1) / 2);
  });

  it('problems solved by only one agent', () => {
    const progs = [
      node('p1', 'A', 'x', 1),
      node('p1', 'B', 'y', 0),
      node('p2', 'A', 'x', 1),
      node('p2', 'B', 'y', 1),
      node('p3', 'B', 'y', 1),
      node('p3', 'B', 'z', 1),
      node('p4', 'A', null, 0),
      node('p4', 'B', 'w', 0),
    ];
    expect(uniqueSolves(progs)).toEqual({ perAgent: { A: 1, B: 1 }, total: 2, solved: 3, problems: 4 });
  });

  it('pass@N − pass@1 gap, with pass1 taking the newest of the best public scores', () => {
    const progs = [
      node('p1', 'A', 'x', 0, 1, 1), // public 1, private 0
      node('p1', 'B', 'y', 1, 0, 2), // public 0, private 1
      node('p2', 'A', 'x', 0, 1, 1),
      node('p2', 'B', 'y', 1, 1, 2), // newest of the public-1 ties: pass1 = 1
    ];
    expect(passGap(progs)).toEqual({ pass1: 0.5, passN: 1, gap: 0.5 });
    expect(passGap([])).toEqual({ pass1: 0, passN: 0, gap: 0 });
  });

  it('entropies: counts, agent selection, sampled-token log-probs, unigram token counts (all in nats)', () => {
    expect(entropy([1, 1])).toBeCloseTo(Math.LN2, 15);
    expect(entropy([2, 0])).toBe(0);
    expect(entropy([])).toBe(0);
    expect(agentSelectionEntropy(nodes)).toBeCloseTo(-(3 / 5) * Math.log(3 / 5) - (2 / 5) * Math.log(2 / 5), 15);
    expect(agentSelectionEntropy([node('p', 'A', 'x')], ['A', 'B'])).toBe(0);
    expect(tokenEntropyFromLogProbs([[Math.log(0.5), Math.log(0.25)], new Float32Array([])])).toBeCloseTo(
      1.5 * Math.LN2,
      12,
    );
    expect(tokenEntropyFromLogProbs([])).toBe(0);
    expect(() => tokenEntropyFromLogProbs([[0.1]])).toThrow(/≤ 0/);
    expect(
      unigramEntropy([
        ['a', 'b'],
        ['a', 'a'],
      ]),
    ).toBeCloseTo(-(0.75 * Math.log(0.75) + 0.25 * Math.log(0.25)), 15);
  });

  it('reads a search tree and bundles the measures', () => {
    const tree = newTree('prob', makeSearchConfig({ agents: ['A', 'B'], nodesPerTree: 3 }));
    addNode(tree, forceExpansion(tree, 0, 'A'), { program: 'a b c', score: 1, privateScore: 0 });
    addNode(tree, forceExpansion(tree, 1, 'B'), { program: 'a b d', score: 1, privateScore: 1 });
    addNode(tree, forceExpansion(tree, 0, 'A'), { program: null, score: 0, privateScore: 0 });
    const dn = diversityNodesOf(tree);
    expect(dn.map((n) => [n.problemId, n.agentId, n.id])).toEqual([
      ['prob', 'A', 1],
      ['prob', 'B', 2],
      ['prob', 'A', 3],
    ]);
    const rep = diversityReport(dn, { outputsOf: (p) => p.length.toString() });
    expect(rep.editDistance.acrossAgents).toBeCloseTo(1 / 3, 15);
    expect(rep.behaviour!.all).toBe(1 / 2);
    expect(rep.passGap).toEqual({ pass1: 1, passN: 1, gap: 0 }); // node 2 is the newest public pass and is correct
    expect(rep.uniqueSolves.perAgent).toEqual({ A: 0, B: 1 });
    expect(rep.distinctCorrect.all).toBe(1);
  });
});
