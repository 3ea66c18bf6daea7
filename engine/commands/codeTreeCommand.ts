/**
 * `mars-lab code tree`: MARTI-MARS² search trees of Python programs on a task file (HumanEval, MBPP), written by a real
 * model in-process (`--model`: a .gguf, an HF folder or a name `model fetch` knows) or by any OpenAI-compatible
 * endpoint (`--endpoint URL --endpoint-model ID`: llama.cpp's server, vLLM, Ollama, `mars-lab serve-model`), every
 * node scored by the problem's tests in the sandbox (engine/marti/python/). It reports pass@1 of the greedy answer,
 * the first node's pass (a sampled answer), best-of-tree at each budget, and plain search against T+; the trees,
 * replies and verdicts go to `--out` as JSON lines. Progress on stderr, figures on stdout.
 */
import fs from 'node:fs';
import path from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { UserError } from '../base/userError';
import type { CodeTask } from '../code/tasks/taskFile';
import { makeSearchConfig } from '../marti/search/abmcts';
import { answerOnce, growPythonTrees, summariseTrees, type SandboxContext } from '../marti/python/pythonTrees';
import { treeLines } from '../marti/python/pythonTreeLines';
import { loadRealModel } from '../model/realModel';
import { EndpointChatPolicy, InProcessChatPolicy, type ChatPolicy } from '../policy/chatPolicy';
import { endpointSourceSchema } from '../policy/policySource';
import { Rng } from '../random/prng';
import { initBackend, type BackendName } from '../tensor/backend';
import { addSandboxOptions, count, prepareSandbox, progress, resolveTasks } from './codeOptions';
import { resolveModelPath } from './modelUseCommands';
import { backendOption } from './options';

interface TreeOptions {
  tasks: string;
  model?: string;
  endpoint?: string;
  endpointModel?: string;
  apiKeyEnv?: string;
  concurrency?: number;
  problems?: string;
  nodes: number;
  search: 'plain' | 'tplus' | 'both';
  posterior: 'beta' | 'gaussian';
  greedy: boolean;
  maxNewTokens: number;
  temperature: number;
  topP: number;
  seed: number;
  out?: string;
  json?: boolean;
  backend?: BackendName;
}

const unit = (name: string, max: number) => (v: string) => {
  const x = Number(v);
  if (v.trim() === '' || !Number.isFinite(x) || x < 0 || x > max) {
    throw new InvalidArgumentError(`expected a number from 0 to ${max} (${name})`);
  }
  return x;
};

/** `--problems`: "20" (the first 20), "10:30" (indices 10 to 29) or "HumanEval/0,HumanEval/2" (by id). */
export function pickProblems(tasks: readonly CodeTask[], spec: string | undefined): CodeTask[] {
  if (spec === undefined) return [...tasks];
  if (/^\d+$/.test(spec)) return tasks.slice(0, Number(spec));
  const range = /^(\d+):(\d+)$/.exec(spec);
  if (range) return tasks.slice(Number(range[1]), Number(range[2]));
  const ids = spec.split(',').map((s) => s.trim());
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const missing = ids.filter((id) => !byId.has(id));
  if (missing.length) {
    throw new UserError(`--problems: no problem ${missing.map((m) => JSON.stringify(m)).join(', ')} in the task file`);
  }
  return ids.map((id) => byId.get(id)!);
}

async function policyOf(o: TreeOptions): Promise<ChatPolicy> {
  if (o.model && o.endpoint) throw new UserError('code tree: give --model or --endpoint, not both');
  if (o.endpoint) {
    if (!o.endpointModel) throw new UserError('--endpoint: also give --endpoint-model ID (GET /v1/models lists them)');
    const parsed = endpointSourceSchema.safeParse({
      kind: 'endpoint',
      baseUrl: o.endpoint,
      model: o.endpointModel,
      ...(o.apiKeyEnv ? { apiKeyEnv: o.apiKeyEnv } : {}),
      ...(o.concurrency ? { concurrency: o.concurrency } : {}),
    });
    if (!parsed.success) {
      const i = parsed.error.issues[0]!;
      throw new UserError(`--${i.path[0] === 'baseUrl' ? 'endpoint' : String(i.path[0])}: ${i.message}`);
    }
    return new EndpointChatPolicy(parsed.data, o.endpointModel);
  }
  if (!o.model) {
    throw new UserError('code tree: give --model (a .gguf, a folder or smollm2-135m-instruct) or --endpoint URL');
  }
  const where = await resolveModelPath(o.model);
  const report = await initBackend({ force: o.backend });
  process.stderr.write(`loading ${where} (${report.chosen}, matrix products: ${report.native.detail})\n`);
  const real = await loadRealModel(where);
  if (!real.encoder) {
    process.stderr.write(`${where}: no chat template; chats are sent as raw "user: …" text\n`);
  }
  return new InProcessChatPolicy(real, path.basename(where));
}

function budgetsOf(nodes: number): number[] {
  return [...new Set([4, 8, 16, nodes].filter((b) => b <= nodes))].sort((a, b) => a - b);
}

function writeLines(file: string, rows: readonly unknown[]): void {
  fs.writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + (rows.length ? '\n' : ''));
}

async function runCodeTree(opts: TreeOptions & Record<string, unknown>): Promise<void> {
  const { o, iso, limits } = await prepareSandbox(opts);
  const tasks = pickProblems(await resolveTasks(opts.tasks, o.format), opts.problems);
  if (tasks.length === 0) throw new UserError('--problems: selects no problem');
  const policy = await policyOf(opts);
  const sandbox: SandboxContext = { iso, limits, workers: o.workers };
  const seed = new Rng(Math.floor(opts.seed));
  const sampling = { maxNewTokens: opts.maxNewTokens, temperature: opts.temperature, topP: opts.topP };
  if (opts.out) fs.mkdirSync(opts.out, { recursive: true });
  const summary: Record<string, unknown> = {
    model: policy.label,
    tasks: opts.tasks,
    problems: tasks.length,
    nodes: opts.nodes,
    sampling,
    seed: opts.seed,
    isolation: iso.kind,
  };
  // Written after each part, so a long evaluation stopped midway keeps what it measured.
  const save = () => {
    if (opts.out) fs.writeFileSync(path.join(opts.out, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
  };
  if (opts.greedy) {
    const t0 = performance.now();
    process.stderr.write(`greedy answers: ${tasks.length} problems\n`);
    const answers = await answerOnce(
      tasks,
      policy,
      { ...sampling, temperature: 0, topP: 1 },
      seed.split('greedy'),
      sandbox,
    );
    const passed = answers.filter((a) => a.score.status === 'passed').length;
    summary.greedy = { pass1: passed / tasks.length, passed, seconds: (performance.now() - t0) / 1000 };
    save();
    if (opts.out) {
      writeLines(
        path.join(opts.out, 'greedy.jsonl'),
        answers.map((a) => ({
          task_id: a.task.id,
          passed: a.score.status === 'passed',
          status: a.score.status,
          reason: a.score.reason,
          completion: a.code,
          reply: a.reply,
        })),
      );
    }
    if (!opts.json) {
      console.log(`greedy pass@1\t${(passed / tasks.length).toFixed(4)}\t(${passed} of ${tasks.length})`);
    }
  }
  const kinds = opts.search === 'both' ? (['plain', 'tplus'] as const) : ([opts.search] as const);
  for (const kind of kinds) {
    const t0 = performance.now();
    const search = makeSearchConfig({
      agents: ['policy'],
      nodesPerTree: opts.nodes,
      posterior: opts.posterior,
      depthWeighting: kind === 'tplus',
    });
    const { trees, timing } = await growPythonTrees({
      tasks,
      agents: [{ id: 'policy', policy }],
      search,
      feedback: kind === 'tplus' ? 'rich' : 'plain',
      ...sampling,
      searchRng: seed.split(`search-${kind}`),
      tokenRng: seed.split(`tokens-${kind}`),
      sandbox,
      onRound: progress(`${kind} trees: nodes`),
    });
    const s = summariseTrees(trees, budgetsOf(opts.nodes));
    const seconds = (performance.now() - t0) / 1000;
    summary[kind] = {
      ...s,
      seconds,
      generationSeconds: timing.generationMs / 1000,
      testSeconds: timing.testMs / 1000,
      replyTokens: timing.replyTokens,
    };
    save();
    if (opts.out) writeLines(path.join(opts.out, `trees-${kind}.jsonl`), treeLines(trees, tasks));
    if (!opts.json) {
      const best = Object.entries(s.bestOfTree)
        .map(([b, v]) => `${b}: ${v.toFixed(4)}`)
        .join(', ');
      console.log(`${kind}\tfirst node ${s.firstNodePass.toFixed(4)}\tbest of tree ${best}`);
      const f = (x: number | null) => (x === null ? 'n/a' : x.toFixed(3));
      const d = s.diversity;
      console.log(
        `${kind}\tdiversity: token edit distance ${f(d.editDistance)}, distinct programs ${f(d.distinctRatio)}`,
      );
      console.log(
        `${kind}\tfresh answers pass ${s.rootPass.toFixed(4)} of ${s.rootNodes}, refinements ${s.refinePass.toFixed(4)} of ${s.refineNodes}; ` +
          `${Math.round(seconds)} s (sampling ${Math.round(timing.generationMs / 1000)} s, tests ${Math.round(timing.testMs / 1000)} s)${timing.replyTokens ? `, ${timing.replyTokens} reply tokens` : ''}`,
      );
    }
  }
  if (opts.json) console.log(JSON.stringify(summary));
}

export function registerCodeTree(code: Command): void {
  addSandboxOptions(
    code
      .command('tree')
      .description(
        'grow MARTI-MARS² search trees of Python programs (AB-MCTS, refinements from test feedback) with a real model or an endpoint; pass@1, best of tree, plain vs T+',
      )
      .requiredOption(
        '--tasks <file|name>',
        'HumanEval or MBPP jsonl / jsonl.gz, or a data set `data fetch` knows (humaneval)',
      )
      .option(
        '--model <path|name>',
        'a real model in-process: .gguf, HF folder, or a name model fetch knows (smollm2-135m-instruct)',
      )
      .option('--endpoint <url>', "an OpenAI-compatible server's /v1 root (its chat completions are used)")
      .option('--endpoint-model <id>', 'the model id the endpoint serves')
      .option('--api-key-env <NAME>', "the environment variable that holds the endpoint's API key")
      .option('--concurrency <n>', 'requests in flight at once to the endpoint (default 8)', count)
      .option('--problems <spec>', 'which problems: N (the first N), A:B (indices A..B-1) or ids separated by commas')
      .option('--nodes <n>', 'nodes a tree (the search budget)', count, 16)
      .addOption(
        new Option('--search <kind>', 'plain search, T+ (rich feedback and depth-guided credit), or both')
          .choices(['plain', 'tplus', 'both'])
          .default('both'),
      )
      .addOption(new Option('--posterior <kind>', 'the search posterior').choices(['beta', 'gaussian']).default('beta'))
      .option('--no-greedy', 'skip the greedy answer a problem (pass@1)')
      .option('--max-new-tokens <n>', 'tokens a reply may take', count, 384)
      .option('--temperature <t>', 'sampling temperature of tree nodes', unit('temperature', 2), 0.8)
      .option('--top-p <p>', 'nucleus sampling of tree nodes', unit('top-p', 1), 0.95)
      .option('--seed <n>', 'seed of the search and token streams (split by problem)', unit('seed', 2 ** 31 - 1), 0)
      .option(
        '--out <dir>',
        'write greedy.jsonl, trees-plain.jsonl, trees-tplus.jsonl and summary.json here (under <home>/code-trees/ the app lists it)',
      )
      .option('--json', 'print the summary as one JSON line')
      .addOption(backendOption()),
  ).action(runCodeTree);
}
