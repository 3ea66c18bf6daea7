/**
 * Diversity of Python programs (engine/marti/python/codeDiversity.ts): tokens without comments and docstrings, a
 * canonical form in which a renamed variable is the same program, and MARTI's pairwise edit distance and distinct
 * ratio over them — 0 and 1/n for a tree of one program written n ways, above 0 for different programs.
 */
import { describe, expect, it } from 'vitest';
import { distinctProgramRatio, pairwiseEditDistance, type DiversityNode } from '../../../../engine/marti/diversity';
import { PYTHON_DIVERSITY, pythonCanonical, pythonTokens } from '../../../../engine/marti/python/codeDiversity';

const A =
  'def f(xs):\n    """Sum of squares."""\n    total = 0  # running\n    for x in xs:\n        total += x ** 2\n    return total\n';
const A_RENAMED =
  "def f(values):\n    '''Another docstring.'''\n    acc = 0\n    for v in values:\n        acc += v ** 2\n    return acc\n";
const B = 'def f(xs):\n    return sum(x * x for x in xs if x > 0)\n';

const nodes = (programs: (string | null)[]): DiversityNode[] =>
  programs.map((program, i) => ({ problemId: 'p', agentId: 'a', id: i + 1, program }));

describe('diversity of Python programs', () => {
  it('tokenizes Python: operators whole, comments and docstrings dropped, strings kept', () => {
    expect(pythonTokens(A)).toEqual('def f ( xs ) : total = 0 for x in xs : total += x ** 2 return total'.split(' '));
    expect(pythonTokens("s = f'a{b}' // 2 != 'x#y'")).toEqual(['s', '=', "f'a{b}'", '//', '2', '!=', "'x#y'"]);
  });

  it('gives a renamed program the same canonical form, and a different program another', () => {
    expect(pythonCanonical(A_RENAMED)).toBe(pythonCanonical(A));
    expect(pythonCanonical(B)).not.toBe(pythonCanonical(A));
    expect(pythonCanonical(B)).toContain('sum');
  });

  it('measures a tree of one program written three ways as not diverse, and different programs as diverse', () => {
    const same = nodes([A, A_RENAMED, A]);
    expect(distinctProgramRatio(same, PYTHON_DIVERSITY).all).toBeCloseTo(1 / 3, 12);
    const mixed = nodes([A, B, null]);
    expect(distinctProgramRatio(mixed, PYTHON_DIVERSITY).all).toBe(1);
    const d = pairwiseEditDistance(mixed, PYTHON_DIVERSITY).all!;
    expect(d).toBeGreaterThan(0.3);
    expect(d).toBeLessThanOrEqual(1);
    expect(pairwiseEditDistance(nodes([A, A]), PYTHON_DIVERSITY).all).toBe(0);
  });
});
