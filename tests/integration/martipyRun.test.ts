/**
 * MARTI-MARS² trained on Python with a real model (issues 30 and 31, item 6): `martipy` on the fetched
 * SmolLM2-135M-Instruct, a heterogeneous team of two agents, each with LoRA adapters of its own on the one frozen base.
 *
 * Checked: a training node's sample is the reply the sampler wrote after the chat's rendered prompt (its recorded
 * log-probabilities are the model's own at those positions: the ids line up); a set's adapters move exactly when one
 * of its agent's nodes had a non-zero advantage (each set learns from its own agent's nodes, and only a tree whose
 * nodes scored differently teaches); the checkpoint carries the second set in PEFT's layout in `agent-<id>/`; the
 * held-out evaluation runs both sets; and a run stopped after step 1 and resumed equals the uninterrupted run line
 * for line, tree for tree and adapter byte for byte. Skips without the model unless MARS_LAB_EXPECT_MODELS=1; needs
 * the sandbox (bubblewrap), which .ci/run installs.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectIsolation } from '../../engine/code/sandbox/isolation';
import { DEFAULT_LIMITS } from '../../engine/code/sandbox/limits';
import { generatePythonTasks } from '../../engine/marti/python/generatedTasks';
import { growPythonTrees } from '../../engine/marti/python/pythonTrees';
import { makeSearchConfig, nonRootNodes } from '../../engine/marti/search/abmcts';
import { padBatch, tokenLogProbs } from '../../engine/model/logProbs';
import { readPeftAdapter } from '../../engine/model/lora/peftAdapter';
import { loadRealModel } from '../../engine/model/realModel';
import { InProcessChatPolicy } from '../../engine/policy/chatPolicy';
import { Rng } from '../../engine/random/prng';
import type { CodeTreeRecord } from '../../engine/records/codeTree';
import { parseRunConfig } from '../../engine/runs/config/configSchema';
import { listCheckpoints, runFilePaths } from '../../engine/runs/folder/runFolder';
import { resumeRun, startRun } from '../../engine/runs/runLoop';
import { realModelOrSkipReason, tempDir } from '../fixtures/gguf/ggufKit';
import { useBackend } from '../helpers/backends';
import { metricLines } from '../helpers/runFixtures';

const { path: MODEL, reason } = realModelOrSkipReason();
let home: { dir: string; remove: () => void };
let evalFile: string;

/** One held-out problem of our own (the run's evaluation file), so the test does not need HumanEval. */
const EVAL_PROBLEM = {
  task_id: 'Own/0',
  prompt: 'def add(a: int, b: int) -> int:\n    """Return the sum of a and b.\n    >>> add(2, 3)\n    5\n    """\n',
  entry_point: 'add',
  canonical_solution: '    return a + b\n',
  test: 'def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n',
};

const config = () =>
  parseRunConfig({
    algorithm: 'martipy',
    seed: 5,
    model: { path: MODEL, lora: { rank: 4, alpha: 8, dropout: 0.05 } },
    team: { configuration: 'heterogeneous', agents: [{ id: 'alpha' }, { id: 'beta' }] },
    search: { nodesPerTree: 3, problemsPerStep: 2 },
    task: {
      minOps: 1,
      maxOps: 1,
      trainProblems: 20,
      maxNewTokens: 64,
      maxTrainTokens: 1024, // every node trains (none is left out as overlong): the routing check below is then exact
      evalTasks: evalFile,
      evalGenerated: 1,
    },
    sampler: { temperature: 1 },
    rl: { lr: 2e-3 },
    budget: { steps: 2 },
    eval: { every: 0, items: 1, temperature: 0 },
    checkpoint: { every: 2 },
  });

describe.skipIf(!MODEL)(`martipy: MARTI on Python with SmolLM2 and two LoRA adapter sets ${reason}`, () => {
  beforeAll(async () => {
    await useBackend('wasm');
    home = tempDir('mars-lab-martipy-');
    evalFile = path.join(home.dir, 'own.jsonl');
    fs.writeFileSync(evalFile, JSON.stringify(EVAL_PROBLEM) + '\n');
  });
  afterAll(() => home.remove());

  it("a node's sample is the reply's ids after the rendered chat, with the model's own log-probabilities", async () => {
    const real = await loadRealModel(MODEL!);
    try {
      const [task] = generatePythonTasks(1, 1, { minOps: 1, maxOps: 1 });
      const { trees } = await growPythonTrees({
        tasks: [task!],
        agents: [{ id: 'policy', policy: new InProcessChatPolicy(real) }],
        search: makeSearchConfig({ agents: ['policy'], nodesPerTree: 2 }),
        feedback: 'plain',
        maxNewTokens: 12,
        temperature: 1,
        topP: 1,
        searchRng: new Rng(1),
        tokenRng: new Rng(2),
        sandbox: { iso: await detectIsolation(), limits: DEFAULT_LIMITS },
      });
      const nodes = nonRootNodes(trees[0]!);
      expect(nodes).toHaveLength(2);
      for (const n of nodes) {
        const s = n.payload!.sample!;
        expect(s.ids).toHaveLength(n.payload!.replyTokens);
        expect(s.logProbs).toHaveLength(s.ids.length);
        // the prompt is the chat as the template renders it: SmolLM2's ends with the assistant's turn opening
        expect(real.tokenizer.decode(s.promptIds)).toMatch(/<\|im_start\|>assistant\n$/);
        const row = [...s.promptIds, ...s.ids];
        const logp = tf.tidy(() => tokenLogProbs(real.model, padBatch([row])).logp.arraySync()[0]!);
        const replyLogp = logp.slice(s.promptIds.length);
        replyLogp.forEach((l, i) => expect(Math.abs(l - s.logProbs[i]!), `token ${i}`).toBeLessThan(2e-3));
      }
    } finally {
      real.model.dispose();
    }
  }, 300_000);

  it('trains each agent on its own nodes, saves both adapter sets, evaluates both and resumes exactly', async () => {
    const whole = await startRun(home.dir, config());
    expect(whole.status).toBe('finished');
    const a = runFilePaths(whole.dir);
    const lines = metricLines(a.metrics);
    expect(lines.map((l) => l.step)).toEqual([1, 2]);
    for (const l of lines) {
      for (const k of ['reward', 'passShare', 'zeroSignalTrees', 'agentShare.alpha', 'agentShare.beta']) {
        expect(l[k], k).toBeTypeOf('number');
      }
      expect(l.overlongSkipped).toBe(0);
    }
    const last = lines.at(-1)!;
    for (const k of ['eval.pass1', 'eval.pass1.beta', 'eval.generatedPass1', 'eval.generatedPass1.beta']) {
      expect(last[k], k).toBeTypeOf('number');
    }
    const trees = fs
      .readFileSync(a.trajectories, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as CodeTreeRecord & { step: number });
    expect(trees).toHaveLength(4);
    for (const t of trees) {
      expect(t.kind).toBe('code.tree');
      expect(t.nodes).toHaveLength(3);
      // one GRPO group a tree: advantages sum to zero
      expect(Math.abs(t.nodes.reduce((s, n) => s + n.advantage, 0))).toBeLessThan(1e-9);
    }

    // Each set's B matrices start at zero and move only through a node of its own agent with a non-zero advantage.
    const ck = path.join(whole.dir, 'checkpoints', '2');
    for (const [agent, dir] of [
      ['alpha', ck],
      ['beta', path.join(ck, 'agent-beta')],
    ] as const) {
      const adapter = await readPeftAdapter(dir);
      expect(adapter.spec).toMatchObject({ rank: 4, alpha: 8 });
      let moved = 0;
      for (const [name, t] of adapter.tensors) if (name.endsWith('.B')) moved += t.data.filter((x) => x !== 0).length;
      const taught = trees.some((t) => t.nodes.some((n) => n.agent === agent && n.advantage !== 0));
      expect(moved > 0, `${agent}: taught ${taught}, moved ${moved}`).toBe(taught);
    }

    const part = await startRun(home.dir, config(), { stopAfterStep: 1 });
    expect(listCheckpoints(part.dir).map((c) => c.step)).toEqual([1]);
    expect((await resumeRun(part.dir)).status).toBe('finished');
    const b = runFilePaths(part.dir);
    expect(metricLines(b.metrics)).toEqual(lines);
    expect(fs.readFileSync(b.trajectories, 'utf8')).toBe(fs.readFileSync(a.trajectories, 'utf8'));
    for (const sub of ['', 'agent-beta']) {
      const bytes = (run: string) =>
        fs.readFileSync(path.join(run, 'checkpoints', '2', sub, 'adapter_model.safetensors'));
      expect(bytes(part.dir).equals(bytes(whole.dir)), sub || 'alpha').toBe(true);
    }
  }, 900_000);
});
