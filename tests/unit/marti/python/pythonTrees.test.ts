/**
 * Nodes and trees of Python programs (engine/marti/python/): programs scored by HumanEval's real tests in the sandbox,
 * with the reason and both feedback forms; trees grown by a scripted chat policy, which shows that a refinement reads
 * its parent's program and feedback, that T+'s rich feedback carries the failing assertion while the plain form does
 * not, and that a problem's tree does not depend on the problems grown beside it.
 *
 * Skips when HumanEval is not fetched (unless MARS_LAB_EXPECT_MODELS=1) or bubblewrap is absent (unless
 * MARS_LAB_EXPECT_PEERS=1), as the other sandbox tests.
 */
import fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { detectIsolation, findExecutable, type Isolation } from '../../../../engine/code/sandbox/isolation';
import { DEFAULT_LIMITS } from '../../../../engine/code/sandbox/limits';
import { loadTaskFile, type CodeTask } from '../../../../engine/code/tasks/taskFile';
import { artefactPath } from '../../../../engine/fetch/cache';
import { knownArtefact } from '../../../../engine/fetch/catalogue';
import { scorePrograms } from '../../../../engine/marti/python/pythonNodes';
import {
  growPythonTrees,
  summariseTrees,
  type PythonTree,
  type SandboxContext,
} from '../../../../engine/marti/python/pythonTrees';
import { treeLines } from '../../../../engine/marti/python/pythonTreeLines';
import { codeTreeLineSchema } from '../../../../engine/records/codeTree';
import { makeSearchConfig } from '../../../../engine/marti/search/abmcts';
import type { ChatMessage } from '../../../../engine/model/chat/chatTemplate';
import type { ChatPolicy, ChatReply, ChatSampling } from '../../../../engine/policy/chatPolicy';
import { Rng } from '../../../../engine/random/prng';

const LIMITS = { ...DEFAULT_LIMITS, timeoutS: 3 };
let sandbox: SandboxContext | null = null;
let tasks: Map<string, CodeTask>;
let skipReason = '';

beforeAll(async () => {
  const file = artefactPath(knownArtefact('humaneval'));
  if (!fs.existsSync(file)) {
    skipReason = `${file} is absent: run \`mars-lab data fetch humaneval\``;
    if (process.env.MARS_LAB_EXPECT_MODELS === '1') throw new Error(`MARS_LAB_EXPECT_MODELS=1 but ${skipReason}`);
    return;
  }
  if (!findExecutable('bwrap')) {
    skipReason = 'bubblewrap is absent (apt-get install bubblewrap)';
    if (process.env.MARS_LAB_EXPECT_PEERS === '1') throw new Error(`MARS_LAB_EXPECT_PEERS=1 but ${skipReason}`);
    return;
  }
  tasks = new Map(loadTaskFile(file).map((t) => [t.id, t]));
  const iso: Isolation = await detectIsolation();
  sandbox = { iso, limits: LIMITS, workers: 2 };
});

function ready(ctx: { skip: (r: string) => void }): SandboxContext {
  if (!sandbox) ctx.skip(skipReason);
  return sandbox!;
}

const TRUNCATE_OK = 'def truncate_number(number: float) -> float:\n    return number % 1.0\n';
const TRUNCATE_WRONG = 'def truncate_number(number: float) -> float:\n    return number - 1\n';

describe('a node: a program against its tests, in the sandbox', () => {
  it('passes as a whole function or as a bare body after the prompt', async (ctx) => {
    const s = ready(ctx);
    const t = tasks.get('HumanEval/2')!;
    const [whole, body, flat] = await scorePrograms(
      [
        { task: t, code: TRUNCATE_OK },
        { task: t, code: '    return number % 1.0\n' },
        { task: t, code: 'return number % 1.0\n' },
      ],
      s.iso,
      s.limits,
    );
    for (const r of [whole!, body!, flat!]) {
      expect(r.status, r.reason).toBe('passed');
      expect(r.score).toBe(1);
      expect(r.feedback.plain).toContain('Your solution is correct for 1 of 1 test.');
    }
  });

  it('fails a wrong program: plain feedback gives the verdict, rich the failing assertion and what it printed', async (ctx) => {
    const s = ready(ctx);
    const t = tasks.get('HumanEval/2')!;
    const printing = 'def truncate_number(number: float) -> float:\n    print("seen", number)\n    return number - 1\n';
    const [wrong, loud] = await scorePrograms(
      [
        { task: t, code: TRUNCATE_WRONG },
        { task: t, code: printing },
      ],
      s.iso,
      s.limits,
    );
    expect(wrong!.score).toBe(0);
    expect(wrong!.status).toBe('failed');
    expect(wrong!.reason).toContain('assert candidate(3.5) == 0.5');
    expect(wrong!.feedback.plain).toBe('# Test 1\nResult: Wrong\n# Summary\nYour solution is correct for 0 of 1 test.');
    expect(wrong!.feedback.rich).toContain('Result: Wrong\nError: AssertionError\nAt: `assert candidate(3.5) == 0.5`');
    expect(loud!.feedback.rich).toContain('Output:\nseen 3.5');
    expect(loud!.feedback.plain).not.toContain('seen');
    // the same verdict as data, for the app: HumanEval's one test, its error and the assertion that raised it
    expect(wrong!.tests).toEqual([
      { test: 'check(truncate_number)', passed: false, error: 'AssertionError', at: 'assert candidate(3.5) == 0.5' },
    ]);
  });

  it('scores no code block, a syntax error and an endless loop 0, each with its reason', async (ctx) => {
    const s = ready(ctx);
    const t = tasks.get('HumanEval/23')!;
    const [none, syntax, loop] = await scorePrograms(
      [
        { task: t, code: null },
        { task: t, code: 'def strlen(string: str) -> int:\n    return len(string\n' },
        { task: t, code: 'def strlen(string: str) -> int:\n    while True:\n        pass\n' },
      ],
      { ...s.iso },
      { ...s.limits, timeoutS: 1 },
    );
    expect([none!.score, syntax!.score, loop!.score]).toEqual([0, 0, 0]);
    expect(none!.status).toBe('no-code');
    expect(none!.tests).toEqual([]);
    expect(loop!.tests).toEqual([
      { test: 'check(strlen)', passed: false, error: expect.stringContaining('timed out after 1 s'), at: null },
    ]);
    expect(none!.reason).toBe('no code block in the reply');
    expect(syntax!.feedback.rich).toMatch(/Error: SyntaxError/);
    expect(loop!.status).toBe('timeout');
    expect(loop!.feedback.rich).toContain('timed out after 1 s');
  });

  it('scores MBPP asserts one by one: the share passed under "fraction", with each test named', async (ctx) => {
    const s = ready(ctx);
    const t: CodeTask = {
      id: 'mbpp/1',
      format: 'mbpp',
      prompt: 'Write a function to double a number.',
      entryPoint: null,
      canonical: 'def double(x):\n    return 2 * x\n',
      test: '',
      tests: ['assert double(1) == 2', 'assert double(0) == 0', 'assert double(3) == 6'],
      setup: '',
      line: 1,
    };
    const code = 'def double(x):\n    return x + 1 if x == 1 else x * 2 if x == 0 else x + 1\n';
    const [frac] = await scorePrograms([{ task: t, code }], s.iso, s.limits, 'fraction');
    const [all] = await scorePrograms([{ task: t, code }], s.iso, s.limits, 'allPass');
    expect(frac!.score).toBeCloseTo(2 / 3, 12);
    expect(all!.score).toBe(0);
    expect(frac!.feedback.rich).toContain(
      '# Test 3\nResult: Wrong\nError: AssertionError\nAt: `assert double(3) == 6`',
    );
    expect(frac!.feedback.rich).toContain('# Test 1\nResult: Correct');
    expect(frac!.feedback.plain).toContain('Your solution is correct for 2 of 3 tests.');
    expect(frac!.tests.map((o) => [o.test, o.passed, o.error, o.at])).toEqual([
      ['assert double(1) == 2', true, null, null],
      ['assert double(0) == 0', true, null, null],
      ['assert double(3) == 6', false, 'AssertionError', 'assert double(3) == 6'],
    ]);
  });
});

/**
 * Writes a wrong program for a problem from the problem alone; a refinement is right only when its chat shows the
 * failing assertion (what rich feedback adds). Every chat is recorded.
 */
class FixesFromAssertions implements ChatPolicy {
  readonly label = 'scripted';
  readonly chats: string[] = [];
  async reply(chats: readonly (readonly ChatMessage[])[]): Promise<ChatReply[]> {
    return chats.map((c) => {
      const text = c.at(-1)!.content;
      this.chats.push(text);
      const fixed = text.includes('At: `assert');
      const code = text.includes('def strlen')
        ? `def strlen(string: str) -> int:\n    return ${fixed ? 'len(string)' : 'len(string) + 1'}\n`
        : fixed
          ? TRUNCATE_OK
          : TRUNCATE_WRONG;
      return { text: `Here you go:\n\`\`\`python\n${code}\`\`\`\n`, tokens: 10, finish: 'stop' as const };
    });
  }
}

/** Right or wrong by a draw from the chat's own stream. */
class Coin implements ChatPolicy {
  readonly label = 'coin';
  async reply(chats: readonly (readonly ChatMessage[])[], s: ChatSampling): Promise<ChatReply[]> {
    return chats.map((c, i) => {
      const good = s.rngs[i]!.next() < 0.3;
      const isStrlen = c.at(-1)!.content.includes('def strlen');
      const code = isStrlen
        ? `def strlen(string: str) -> int:\n    return len(string)${good ? '' : ' * 2'}\n`
        : good
          ? TRUNCATE_OK
          : TRUNCATE_WRONG;
      return { text: `\`\`\`python\n${code}\`\`\``, tokens: 5, finish: 'stop' as const };
    });
  }
}

async function grow(policy: ChatPolicy, ids: string[], feedback: 'plain' | 'rich', s: SandboxContext, nodes = 6) {
  return growPythonTrees({
    tasks: ids.map((id) => tasks.get(id)!),
    agents: [{ id: 'policy', policy }],
    search: makeSearchConfig({ agents: ['policy'], nodesPerTree: nodes, depthWeighting: feedback === 'rich' }),
    feedback,
    maxNewTokens: 64,
    temperature: 1,
    topP: 1,
    searchRng: new Rng(7).split('search'),
    tokenRng: new Rng(7).split('tokens'),
    sandbox: s,
  });
}

const shape = (t: PythonTree) => t.nodes.slice(1).map((n) => [n.parentId, n.program, n.privateScore]);

describe('trees of Python programs', () => {
  it("a refinement reads its parent's program and feedback; only rich feedback shows the assertion that fixes it", async (ctx) => {
    const s = ready(ctx);
    const ids = ['HumanEval/2', 'HumanEval/23'];
    const plainPolicy = new FixesFromAssertions();
    const richPolicy = new FixesFromAssertions();
    const plainTrees = (await grow(plainPolicy, ids, 'plain', s)).trees;
    const richTrees = (await grow(richPolicy, ids, 'rich', s)).trees;
    const plain = summariseTrees(plainTrees, [6]);
    const rich = summariseTrees(richTrees, [6]);
    // Refinements of a failing node: each passes when it read the assertion (rich), none when it read the verdict.
    const ofFailing = (trees: PythonTree[]) =>
      trees.flatMap((t) => t.nodes.filter((n) => n.parentId && t.nodes[n.parentId]!.privateScore === 0));
    expect(ofFailing(plainTrees).length).toBeGreaterThan(0);
    expect(ofFailing(richTrees).length).toBeGreaterThan(0);
    expect(ofFailing(plainTrees).every((n) => n.privateScore === 0)).toBe(true);
    expect(ofFailing(richTrees).every((n) => n.privateScore === 1)).toBe(true);
    expect(plain.refinePass).toBe(0);
    expect(rich.bestOfTree[6]).toBe(1);
    // The scripted policy writes two programs a problem: the plain trees repeat one, the rich ones hold both.
    expect(plain.diversity.distinctRatio!).toBeCloseTo(1 / 6, 12);
    expect(plain.diversity.editDistance).toBe(0);
    expect(rich.diversity.distinctRatio!).toBeCloseTo(2 / 6, 12);
    expect(rich.diversity.editDistance!).toBeGreaterThan(0);
    expect(plain.rootPass).toBe(0);
    expect(rich.rootPass).toBe(0);
    expect(plain.bestOfTree[6]).toBe(0);
    // A refinement's chat holds its parent's program, in a block, under "Your previous code:".
    const refine = richPolicy.chats.find((c) => c.includes('Your previous code:'))!;
    expect(refine).toContain(`Your previous code:\n\`\`\`python\n${TRUNCATE_WRONG.trimEnd()}\n\`\`\``);
    expect(plainPolicy.chats.filter((c) => c.includes('Your previous code:')).every((c) => !c.includes('At: `'))).toBe(
      true,
    );
    // Every tree spent its budget; the nodes carry the reply, the reason and the feedback they were scored with.
    for (const t of richTrees) expect(t.nodes.length).toBe(7);
    const failed = richTrees[0]!.nodes[1]!;
    expect(failed.payload!.reason).toMatch(/AssertionError/);
    expect(failed.payload!.feedback).toContain('At: `assert');
    // What `code tree --out` writes of them reads back with the app's schema, each test's outcome with it.
    const lines = treeLines(
      richTrees,
      ids.map((id) => tasks.get(id)!),
    ).map((l) => codeTreeLineSchema.parse(JSON.parse(JSON.stringify(l))));
    expect(lines.map((l) => [l.task_id, l.format, l.entry_point])).toEqual([
      ['HumanEval/2', 'humaneval', 'truncate_number'],
      ['HumanEval/23', 'humaneval', 'strlen'],
    ]);
    expect(lines[0]!.prompt).toBe(tasks.get('HumanEval/2')!.prompt);
    const first = lines[0]!.nodes[0]!;
    expect([first.parent, first.passed, first.program]).toEqual([0, false, TRUNCATE_WRONG]);
    expect(first.tests).toEqual([
      { test: 'check(truncate_number)', passed: false, error: 'AssertionError', at: expect.stringMatching(/^assert /) },
    ]);
    const fixed = lines[0]!.nodes.find((n) => n.parent === first.id)!;
    expect(fixed.tests).toEqual([{ test: 'check(truncate_number)', passed: true, error: null, at: null }]);
  }, 60_000);

  it('grows the same tree for a problem whether or not other problems grow beside it', async (ctx) => {
    const s = ready(ctx);
    const together = (await grow(new Coin(), ['HumanEval/23', 'HumanEval/2'], 'plain', s, 5)).trees;
    const alone = (await grow(new Coin(), ['HumanEval/2'], 'plain', s, 5)).trees;
    expect(shape(alone[0]!)).toEqual(shape(together[1]!));
    // and the draws matter: the two problems' trees are not the same sequence of verdicts by construction
    expect(together.flatMap((t) => t.nodes.slice(1).map((n) => n.privateScore))).toContain(1);
  }, 60_000);
});
