/**
 * The renderer's pure helpers for Python in the windows (issue 31 item 7, issue 33 item 5): highlighting as lines of
 * classed segments that give back the program's text (lib/pythonHighlight.ts); a refinement's line diff against its
 * parent (lib/programDiff.ts); a code tree's line as the tree view's record (lib/codeTrees.ts, with a martipy record's
 * advantages and step); and a reply split into prose, fenced code and special tokens, hidden or shown
 * (lib/replyText.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CodeTreeLine } from '../../../engine/records/codeTree';
import { codeTreeRecord, parentProgram, problemTitle } from '../../../renderer/src/lib/codeTrees';
import { programDiff } from '../../../renderer/src/lib/programDiff';
import { replyParts, replyShown, specialCount } from '../../../renderer/src/lib/replyText';

/**
 * pythonHighlight.ts is loaded by a path the type checker does not follow: highlight.js's types reference the DOM
 * library (`/// <reference lib="dom" />`), which would enter the engine's type check (tsconfig.json, no DOM) through
 * this test and retype the browser tests' page functions. Its signature is restated here; the renderer's own check
 * (svelte-check) types the module itself.
 */
type HighlightPython = (code: string) => { text: string; cls: string }[][];
const HIGHLIGHT_MODULE = '../../../renderer/src/lib/pythonHighlight';
const { highlightPython } = (await import(HIGHLIGHT_MODULE)) as { highlightPython: HighlightPython };

const PROGRAM = 'def f(x: int) -> int:\n    """Double."""\n    return 2 * x  # twice\n';

describe('Python highlighting', () => {
  it('classes keywords, strings, numbers and comments, and gives back the text line by line', () => {
    const lines = highlightPython(PROGRAM);
    expect(lines.map((l) => l.map((s) => s.text).join(''))).toEqual(PROGRAM.trimEnd().split('\n'));
    const classed = (cls: string) =>
      lines
        .flat()
        .filter((s) => s.cls.split(' ').includes(cls))
        .map((s) => s.text);
    expect(classed('hljs-keyword')).toEqual(['def', 'return']);
    expect(classed('hljs-string')).toEqual(['"""Double."""']);
    expect(classed('hljs-number')).toEqual(['2']);
    expect(classed('hljs-comment')).toEqual(['# twice']);
  });

  it('keeps a string across lines in one class on each line', () => {
    const lines = highlightPython('s = """a\nb"""');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toEqual([{ text: 'b"""', cls: 'hljs-string' }]);
  });
});

describe('a refinement against its parent', () => {
  it('marks removed and added lines and counts them', () => {
    const d = programDiff('def f(x):\n    return x + 1\n', 'def f(x):\n    # fixed\n    return 2 * x\n');
    expect(d.rows).toEqual([
      { kind: 'same', text: 'def f(x):' },
      { kind: 'del', text: '    return x + 1' },
      { kind: 'add', text: '    # fixed' },
      { kind: 'add', text: '    return 2 * x' },
    ]);
    expect([d.added, d.removed]).toEqual([2, 1]);
    expect(programDiff('a\n', 'a\n')).toMatchObject({ added: 0, removed: 0 });
  });
});

describe('a code tree as the tree view draws it', () => {
  const file = path.resolve('tests/fixtures/code-trees/mbpp-scripted/trees-plain.jsonl');
  const line = JSON.parse(fs.readFileSync(file, 'utf8').split('\n')[0]!) as CodeTreeLine;

  it('has the problem at its root and each node with its tests as its results', () => {
    const r = codeTreeRecord(line, 'plain');
    expect(r.nodes[0]).toMatchObject({ id: 0, parentId: null, agent: null });
    expect(r.nodes.slice(1).map((n) => [n.id, n.parentId, n.program])).toEqual(
      line.nodes.map((n) => [n.id, n.parent, n.program]),
    );
    const first = line.nodes[0]!;
    expect(r.nodes[1]!.public).toEqual({
      passed: first.tests!.filter((t) => t.passed).length,
      total: first.tests!.length,
      score: first.score,
    });
    expect(r.metrics.passN).toBe(line.nodes.some((n) => n.passed) ? 1 : 0);
    expect(r.statement).toBe('Write a function to double a number.');
  });

  it("carries a martipy record's advantages and step; a folder's line has none", () => {
    expect(codeTreeRecord(line, 'plain').nodes.map((n) => n.advantage)).toEqual([null, ...line.nodes.map(() => null)]);
    const advantages = line.nodes.map((_, i) => i - 1.5);
    const record = { ...line, nodes: line.nodes.map((n, i) => ({ ...n, advantage: advantages[i]! })) };
    const r = codeTreeRecord(record, 'tplus', 7);
    expect(r.nodes.map((n) => n.advantage)).toEqual([null, ...advantages]);
    expect([r.step, r.mode]).toEqual([7, 'tplus']);
  });

  it("finds a refinement's parent program, none for a fresh one", () => {
    const fresh = line.nodes.find((n) => n.parent === 0)!;
    expect(parentProgram(line, fresh)).toBeNull();
    const refined = line.nodes.find((n) => n.parent !== 0);
    if (refined) expect(parentProgram(line, refined)).toBe(line.nodes.find((n) => n.id === refined.parent)!.program);
  });

  it("titles a HumanEval problem by its function and its docstring's first sentence", () => {
    const prompt =
      'def strlen(string: str) -> int:\n    """ Return length of given string\n    >>> strlen(\'\')\n    0\n    """\n';
    expect(problemTitle({ task_id: 'HumanEval/23', prompt, entry_point: 'strlen' })).toBe(
      'strlen: Return length of given string',
    );
    expect(problemTitle({ task_id: 'x/1', entry_point: null })).toBe('x/1');
  });
});

describe('a reply split for drawing', () => {
  const reply = 'Here:\n```python\ndef f():\n    return 1\n```<|im_end|>\n<|im_start|>assistant';

  it('hides special tokens by default and finds the Python block', () => {
    const parts = replyParts(reply, false);
    expect(parts.filter((p) => p.kind === 'special')).toEqual([]);
    expect(parts).toContainEqual({
      kind: 'code',
      lang: 'python',
      code: 'def f():\n    return 1',
      python: true,
      fence: '```python',
      closed: true,
    });
    expect(parts.map((p) => (p.kind === 'text' ? p.text : '')).join('')).not.toContain('<|');
    expect(specialCount(reply)).toBe(2);
  });

  it('shows each special token where it stood when asked', () => {
    const parts = replyParts(reply, true);
    expect(parts.filter((p) => p.kind === 'special').map((p) => p.text)).toEqual(['<|im_end|>', '<|im_start|>']);
    const order = parts.map((p) => p.kind);
    expect(order.indexOf('code')).toBeLessThan(order.indexOf('special'));
  });

  it('runs an unclosed block to the end, and leaves other languages unhighlighted', () => {
    expect(replyParts('```py\nx = 1', false)).toEqual([
      { kind: 'code', lang: 'py', code: 'x = 1', python: true, fence: '```py', closed: false },
    ]);
    expect(replyParts('```\nls -l\n```', false)[0]).toMatchObject({ python: false, code: 'ls -l' });
    expect(replyParts('no code </s>', false)).toEqual([{ kind: 'text', text: 'no code ' }]);
    // the toy tasks' own symbols are what a seqgrpo policy wrote: never hidden
    expect(replyParts('s0<pad><eos> <unk>', false)).toEqual([{ kind: 'text', text: 's0<pad><eos> <unk>' }]);
  });

  it("draws a chatgrpo reply's raw text (its end token kept) when special tokens are shown, its plain text otherwise", () => {
    const r = { output: '5', raw: '5<|im_end|>' };
    expect(replyShown(r, false)).toBe('5');
    expect(replyShown(r, true)).toBe('5<|im_end|>');
    expect(replyParts(replyShown(r, true), true)).toEqual([
      { kind: 'text', text: '5' },
      { kind: 'special', text: '<|im_end|>' },
    ]);
    // a record from before `raw` (or seqgrpo's) shows its one text either way
    expect(replyShown({ output: 's1 s2' }, true)).toBe('s1 s2');
  });
});
