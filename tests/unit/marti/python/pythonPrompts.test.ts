/**
 * The chats of a Python tree and reading the program out of a reply (engine/marti/python/pythonPrompts.ts): the
 * refinement carries the parent's program and its feedback in the released layout, the problem is always there, and
 * extraction prefers the block that defines the function over a trailing block of usage examples.
 */
import { describe, expect, it } from 'vitest';
import type { CodeTask } from '../../../../engine/code/tasks/taskFile';
import { extractCode, refineChat, rootChat } from '../../../../engine/marti/python/pythonPrompts';

const TASK: CodeTask = {
  id: 'T/0',
  format: 'humaneval',
  prompt: 'def add(a: int, b: int) -> int:\n    """Return a + b.\n    >>> add(1, 2)\n    3\n    """\n',
  entryPoint: 'add',
  canonical: '    return a + b\n',
  test: 'def check(candidate):\n    assert candidate(1, 2) == 3\n',
  tests: [],
  setup: '',
  line: 1,
};

describe('extractCode', () => {
  it('takes the block that defines the entry point, not a later block of examples', () => {
    const reply =
      'Here it is:\n```python\ndef add(a, b):\n    return a + b\n```\nUse it like this:\n```python\nprint(add(1, 2))\n```\n';
    expect(extractCode(reply, 'add')).toBe('def add(a, b):\n    return a + b\n');
  });

  it('takes the last defining block when the reply rewrites the function', () => {
    const reply =
      '```python\ndef add(a, b):\n    return a - b\n```\nFixed:\n```py\ndef add(a, b):\n    return a + b\n```';
    expect(extractCode(reply, 'add')).toBe('def add(a, b):\n    return a + b\n');
  });

  it('falls back to the last block when none defines the function, and ignores blocks of other languages', () => {
    expect(extractCode('```\nreturn a + b\n```\n```bash\nls\n```', 'add')).toBe('return a + b\n');
  });

  it('reads a block the reply left open (cut at the token budget) to its end', () => {
    expect(extractCode('```python\ndef add(a, b):\n    return (a +', 'add')).toBe('def add(a, b):\n    return (a +\n');
  });

  it('is null without a block, or with an empty one', () => {
    expect(extractCode('def add(a, b): return a + b', 'add')).toBeNull();
    expect(extractCode('```python\n\n```', 'add')).toBeNull();
  });
});

describe('the chats', () => {
  it('asks for the whole function in a block, the problem shown as written', () => {
    const [m] = rootChat(TASK);
    expect(m!.role).toBe('user');
    expect(m!.content).toContain('```python\n' + TASK.prompt.trimEnd() + '\n```');
    expect(m!.content).toMatch(/whole function/);
  });

  it("refines from the parent's program and its feedback, with the problem", () => {
    const feedback = '# Test 1\nResult: Wrong\n# Summary\nYour solution is correct for 0 of 1 tests.';
    const [m] = refineChat(TASK, 'def add(a, b):\n    return a - b\n', feedback);
    const text = m!.content;
    expect(text).toContain(TASK.prompt.trimEnd());
    expect(text).toContain('Your previous code:\n```python\ndef add(a, b):\n    return a - b\n```');
    expect(text).toContain(`Here are the results based on the code above.\n${feedback}`);
    expect(text.indexOf('Your previous code')).toBeLessThan(text.indexOf('Reflect on what was wrong'));
  });

  it('says so when the parent had no code, and puts a role prompt first', () => {
    const [m] = refineChat(TASK, null, 'ignored', 'You are agent beta.');
    expect(m!.content.startsWith('You are agent beta.\n\n')).toBe(true);
    expect(m!.content).toContain("Your previous answer doesn't include any code.");
    expect(m!.content).not.toContain('ignored');
  });
});
