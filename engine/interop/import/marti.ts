/**
 * `mars-lab import marti DIR`: MARTI's tree-search logs become a mars-lab run folder of search trees (issue 18 part 4).
 *
 * What MARTI writes to disk, from its own writer code (TsinghuaC3I/MARTI, main):
 * - marti/agent_workflows/ab_mcts_workflow.py: every prompt of a batch gets `<workflow_args.save_path>/<prompt_id>/`
 *   with `llm_logs/`, `costs/` and `checkpoints/`; `prompt_id` is the prompt's index in its wrapper's batch
 *   (workflow_wrapper.py), so the same folder is reused step after step.
 * - marti/agent_workflows/third_party/mcts_utils/utils.py generate_fn_async: each LLM call of the search writes
 *   `llm_logs/log_<YYYYmmdd_HHMMSS_mmm>_<agent_id>.txt`, the JSON (indent 4) of
 *   `{"agent_id": …, "result": dataclasses.asdict(GenerationResult)}`: `request.messages` (the chat-templated prompt
 *   text), `action_text`, `action_tokens`, `rollout_log_probs` (prompt positions 0.0, then one per action token; null
 *   without --enable_vllm_is_correction), `agent_id`, `sequence_ids`. The node's score is not in it.
 * - get_coverage_and_passk (evaluation only): `<save_path>/all_public_scores.csv` and `all_private_scores.csv`
 *   (`prompt_id,node_idx,public_score|private_score`, node_idx = the node's expansion index from 0).
 * - Training metrics go to wandb or, with --use_tensorboard, to TensorBoard event files in
 *   `<use_tensorboard>/<wandb_run_name>/` (tfevents.ts): they are read when found under DIR or given with
 *   `--metrics PATH`, their scalars by global step into metrics.jsonl under their own tags (`train/agent_0/reward`,
 *   `eval/…`); MARTI's per-agent copies on each agent's own step axis (`agent_<i>_step/…`) are left out.
 * - The in-memory workflow result ({prompt, label, trajectory:[…{reward}…]}) is not written as a file; the search
 *   tree is pickled in evaluation only (Python-only, not read here).
 *
 * So a tree is rebuilt from a prompt folder's calls in time order: `--nodes N` (workflow_args.max_num_nodes) cuts the
 * folder's calls into consecutive trees of N, the k-th tree being taken as step k (without it, a folder is one tree at
 * step 1). A node's parent is inferred: the newest earlier node whose program (its ```python block, as MARTI's
 * parse_python_code finds it) appears in this node's prompt (MARTI's feedback prompt quotes the parent's code), else
 * the root. Scores come from the score CSVs where they cover the tree exactly; otherwise a node's score is unknown
 * (null) and so is its advantage. Advantages are recomputed per tree (groups.ts MARTI_GROUP_NORM) and flagged.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { RECORD_VERSION } from '../../records/version';
import { UserError } from '../../base/userError';
import { findFiles, type ImportOptions, type ImportResult, ProblemLog, ProgressMeter } from './common';
import { MARTI_GROUP_NORM, recomputeAdvantages } from './groups';
import { ImportedRunWriter } from './importedRun';
import { parsePythonJson } from './jsonLines';
import { EVENT_FILE, scalarsByStep } from './tfevents';

const LOG_NAME = /^log_(\d{8}_\d{6}_\d{3})_(.+)\.txt$/;
/** A log file larger than this is skipped with a warning (a call's JSON is kilobytes to a few megabytes). */
const MAX_LOG_BYTES = 256 << 20;

const messagesSchema = z.union([
  z.string(),
  z.array(z.looseObject({ role: z.string().optional(), content: z.unknown() })),
]);
const logSchema = z.looseObject({
  agent_id: z.union([z.string(), z.number()]),
  result: z.looseObject({
    request: z.looseObject({ messages: messagesSchema }),
    // generate_fn_async writes action_text; the older synchronous generate_fn wrote `generation`.
    action_text: z.string().optional(),
    generation: z.string().optional(),
    action_tokens: z.array(z.number()).nullish(),
    rollout_log_probs: z.array(z.number().nullable()).nullish(),
    sequence_ids: z.array(z.number()).nullish(),
  }),
});

interface Call {
  file: string;
  stamp: string;
  agent: string;
  prompt: string;
  completion: string;
  tokens: number;
  logProbs: (number | null)[];
}

/** MARTI's GenerationResult.parse_python_code: the text of the first ```python … ``` block (tabs as four spaces). */
export function pythonBlock(text: string): string | null {
  const m = /```python\n([\s\S]*)\n```/.exec(text);
  return m ? m[1]!.replaceAll('\t', '    ') : null;
}

function promptText(messages: z.infer<typeof messagesSchema>): string {
  if (typeof messages === 'string') return messages;
  return messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))).join('\n');
}

function readCall(file: string, problems: ProblemLog, rel: (f: string) => string): Call | null {
  const name = LOG_NAME.exec(path.basename(file))!;
  const size = fs.statSync(file).size;
  if (size > MAX_LOG_BYTES) {
    problems.add(`${rel(file)}: ${size} bytes, more than a call's log can be; file skipped`);
    return null;
  }
  let value: unknown;
  try {
    value = parsePythonJson(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    problems.add(`${rel(file)}:1: not JSON (${(err as Error).message.split('\n')[0]}); file skipped`);
    return null;
  }
  const parsed = logSchema.safeParse(value);
  const completion = parsed.success ? (parsed.data.result.action_text ?? parsed.data.result.generation) : undefined;
  if (!parsed.success || completion === undefined) {
    const why = parsed.success
      ? '"result.action_text" missing'
      : parsed.error.issues.map((i) => `"${i.path.join('.') || '(file)'}" ${i.message}`).join('; ');
    problems.add(`${rel(file)}:1: not a MARTI llm_logs call (${why}); file skipped`);
    return null;
  }
  const r = parsed.data.result;
  const actionTokens = r.action_tokens ?? [];
  // rollout_log_probs covers the prompt (0.0 each) and then the action: the action's are its last entries.
  const lp = r.rollout_log_probs ?? [];
  const logProbs =
    lp.length >= actionTokens.length && actionTokens.length > 0
      ? lp.slice(lp.length - actionTokens.length).slice(0, actionTokens.length)
      : [];
  return {
    file,
    stamp: name[1]!,
    agent: String(parsed.data.agent_id),
    prompt: promptText(r.request.messages),
    completion,
    tokens: actionTokens.length,
    logProbs,
  };
}

/** `<save_path>/all_{public,private}_scores.csv`: score by prompt folder and node index. */
function readScores(file: string, problems: ProblemLog, rel: (f: string) => string): Map<string, Map<number, number>> {
  const out = new Map<string, Map<number, number>>();
  if (!fs.existsSync(file)) return out;
  const lines = fs.readFileSync(file, 'utf8').split(/\r?\n/);
  lines.forEach((line, i) => {
    if (i === 0 || line.trim() === '') return; // header: prompt_id,node_idx,<kind>_score
    const [p, n, s] = line.split(',');
    const node = Number(n);
    const score = Number(s);
    if (p === undefined || !Number.isInteger(node) || !Number.isFinite(score)) {
      problems.add(`${rel(file)}:${i + 1}: expected prompt_id,node_idx,score; line skipped`);
      return;
    }
    const m = out.get(p.trim()) ?? new Map<number, number>();
    if (!m.has(node)) m.set(node, score); // MARTI appends only new (prompt_id, node_idx) pairs: the first one counts
    out.set(p.trim(), m);
  });
  return out;
}

/**
 * A tree's pass@1, pass@N, avgPass1 and gap as MARTI's get_coverage_and_passk computes them (top_k = 1): pass@1 is
 * the private score of the best node by public score (ties: the later node, np.lexsort((-idx, -public))), pass@N the
 * best private score, avgPass1 the mean private score of nodes whose public score is 1 (else pass@1); all null unless
 * both scores of every node are known.
 */
export function treeScores(
  pub: readonly (number | null)[],
  priv: readonly (number | null)[],
): { pass1: number | null; passN: number | null; avgPass1: number | null; gap: number | null } {
  if (pub.length === 0 || pub.some((x) => x === null) || priv.some((x) => x === null)) {
    return { pass1: null, passN: null, avgPass1: null, gap: null };
  }
  let best = 0;
  pub.forEach((x, i) => {
    if (x! >= pub[best]!) best = i;
  });
  const pass1 = priv[best]!;
  const passN = Math.max(...(priv as number[]));
  const perfect = priv.filter((_, i) => pub[i] === 1) as number[];
  const avgPass1 = perfect.length ? perfect.reduce((a, b) => a + b, 0) / perfect.length : pass1;
  return { pass1, passN, avgPass1, gap: passN - pass1 };
}

/** The TensorBoard event files to read: `--metrics` (a file or a folder), else any under DIR. */
function eventFiles(dir: string, metrics: string | undefined): string[] {
  if (metrics === undefined) return findFiles(dir, (n) => EVENT_FILE.test(n), 4);
  const p = path.resolve(metrics);
  if (!fs.existsSync(p)) {
    throw new UserError(
      `import marti: --metrics ${metrics} does not exist: give MARTI's TensorBoard folder (--use_tensorboard/<run name>) or an events.out.tfevents file`,
    );
  }
  if (fs.statSync(p).isFile()) return [p];
  const found = findFiles(p, (n) => EVENT_FILE.test(n), 3);
  if (found.length === 0) {
    throw new UserError(
      `import marti: --metrics ${metrics} holds no events.out.tfevents.* files: give the folder MARTI's --use_tensorboard wrote (…/<run name>)`,
    );
  }
  return found;
}

function taskIdOf(statement: string): string {
  return `marti:${createHash('sha1').update(statement).digest('hex').slice(0, 12)}`;
}

export async function importMarti(opts: ImportOptions): Promise<ImportResult> {
  const dir = path.resolve(opts.dir);
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new UserError(
      `import marti: ${opts.dir} is not a folder: give MARTI's workflow save_path (workflow_args.save_path)`,
    );
  }
  const logs = findFiles(dir, (n) => LOG_NAME.test(n), 3).filter((f) => path.basename(path.dirname(f)) === 'llm_logs');
  const events = eventFiles(dir, opts.metricsFile);
  if (logs.length === 0 && events.length === 0) {
    throw new UserError(
      `import marti: no llm_logs/log_<time>_<agent>.txt files (nor TensorBoard event files) under ${dir}: give the workflow save_path of a MARTI tree-search run (workflow_args.save_path)`,
    );
  }
  const rel = (f: string) => path.relative(dir, f);
  const problems = new ProblemLog(opts.onWarning);
  const meter = new ProgressMeter([...events, ...logs], opts.onProgress);
  // TensorBoard scalars by global step (a damaged record: one warning naming file, record and byte; the rest read)
  const tb = scalarsByStep(
    events.map((file) => ({ file, name: rel(file) })),
    (m) => problems.add(m),
  );
  for (const f of events) meter.read(f, fs.statSync(f).size);
  const publicScores = readScores(path.join(dir, 'all_public_scores.csv'), problems, rel);
  const privateScores = readScores(path.join(dir, 'all_private_scores.csv'), problems, rel);

  // Calls by prompt folder (the folder above llm_logs), in time order (the file name's stamp, then the name).
  const byFolder = new Map<string, string[]>();
  for (const f of logs) {
    const folder = path.dirname(path.dirname(f));
    byFolder.set(folder, [...(byFolder.get(folder) ?? []), f]);
  }
  const folders = [...byFolder.keys()].sort((a, b) => rel(a).localeCompare(rel(b), undefined, { numeric: true }));

  // Trees by step: a folder's calls cut into consecutive trees of `nodesPerTree` (the k-th is step k), or one tree.
  const n = opts.nodesPerTree;
  const treesByStep = new Map<number, { folder: string; index: number; files: string[] }[]>();
  for (const folder of folders) {
    const files = byFolder.get(folder)!.sort((a, b) => {
      const sa = LOG_NAME.exec(path.basename(a))![1]!;
      const sb = LOG_NAME.exec(path.basename(b))![1]!;
      return sa < sb ? -1 : sa > sb ? 1 : a < b ? -1 : a > b ? 1 : 0;
    });
    const chunks = n
      ? Array.from({ length: Math.ceil(files.length / n) }, (_, k) => files.slice(k * n, (k + 1) * n))
      : [files];
    chunks.forEach((chunk, k) =>
      treesByStep.set(k + 1, [...(treesByStep.get(k + 1) ?? []), { folder, index: k, files: chunk }]),
    );
    if (n && files.length % n !== 0) {
      problems.add(
        `${rel(folder)}: ${files.length} calls is not a multiple of --nodes ${n}: its last tree has ${files.length % n} nodes`,
      );
    }
  }

  const run = new ImportedRunWriter(opts.home, `marti-${path.basename(dir)}`, { id: opts.id });
  let records = 0;
  try {
    const allSteps = [...new Set([...treesByStep.keys(), ...tb.steps.keys()])].sort((a, b) => a - b);
    for (const step of allSteps) {
      const scalars = tb.steps.get(step);
      if (!treesByStep.has(step)) {
        run.metrics.append({ step, time: scalars!.time, ...scalars!.values });
        continue;
      }
      const stepScores: number[] = [];
      let stepNodes = 0;
      let stepTime = 0;
      const trees = treesByStep.get(step)!;
      for (const t of trees) {
        // a turn of the event loop per tree: progress is drawn and Ctrl-C is heard on imports of many thousand calls
        await new Promise((resolve) => setImmediate(resolve));
        const calls: Call[] = [];
        for (const f of t.files) {
          const c = readCall(f, problems, rel);
          const st = fs.statSync(f);
          meter.read(f, st.size);
          stepTime = Math.max(stepTime, st.mtimeMs / 1000);
          if (c) calls.push(c);
        }
        if (calls.length === 0) continue;
        records += calls.length;
        const folderName = path.basename(t.folder);
        // Scores from the CSVs only where they cover this tree exactly (one search in the folder).
        const pub = publicScores.get(folderName);
        const priv = privateScores.get(folderName);
        const covered = (m: Map<number, number> | undefined) =>
          !!m && t.index === 0 && byFolder.get(t.folder)!.length === calls.length && m.size === calls.length;
        const scores: (number | null)[] = calls.map((_, k) => (covered(pub) ? (pub!.get(k) ?? null) : null));
        const advantages = recomputeAdvantages(scores, MARTI_GROUP_NORM);
        const programs = calls.map((c) => pythonBlock(c.completion));
        let inferred = 0;
        const nodes = calls.map((c, k) => {
          let parent = 0;
          for (let j = k - 1; j >= 0; j--) {
            const p = programs[j];
            if (p && p.trim() && c.prompt.includes(p)) {
              parent = j + 1;
              inferred++;
              break;
            }
          }
          return {
            id: k + 1,
            parentId: parent,
            depth: 0,
            agent: c.agent,
            paramId: null,
            prompt: c.prompt,
            completion: c.completion,
            program: programs[k],
            feedback: null,
            parseError: null,
            finish: null,
            public: null,
            private: covered(priv) && priv!.has(k) ? { passed: 0, total: 0, score: priv!.get(k)! } : null,
            score: scores[k],
            genObservation: null,
            expansion: null,
            advantage: advantages[k],
            shapedReward: null,
            trained: false,
            tokens: c.tokens,
            logProbs: c.logProbs,
            imported: { file: rel(c.file), time: c.stamp },
          };
        });
        // a parent is always an earlier node: depths in one pass
        for (const node of nodes) node.depth = node.parentId === 0 ? 1 : nodes[node.parentId - 1]!.depth + 1;
        const statement = calls[0]!.prompt;
        // Fresh attempts (children of the root) at different prompts: this "tree" holds several searches (several
        // steps' problems in one prompt folder); --nodes cuts them apart.
        const problemsHere = new Set(nodes.filter((x) => x.parentId === 0).map((x) => x.prompt)).size;
        if (problemsHere > 1 && !n) {
          problems.add(
            `${rel(t.folder) || '.'}: calls on ${problemsHere} different prompts made one tree: pass --nodes N (workflow_args.max_num_nodes) to cut the folder into one tree per search`,
          );
        }
        const agents = [...new Set(calls.map((c) => c.agent))];
        const known = scores.filter((s): s is number => s !== null);
        stepScores.push(...known);
        stepNodes += nodes.length;
        run.trajectories.append({
          step,
          kind: 'marti.tree',
          version: RECORD_VERSION,
          mode: 'train',
          treeId: `${folderName}#${t.index + 1}`,
          taskId: taskIdOf(statement),
          statement,
          target: '',
          publicTests: [],
          agents,
          metrics: {
            nodes: nodes.length,
            ...treeScores(
              scores,
              nodes.map((x) => x.private?.score ?? null),
            ),
          },
          agentShares: Object.fromEntries(
            agents.map((a) => [a, calls.filter((c) => c.agent === a).length / calls.length]),
          ),
          // the root holds the problem, no program: score 0, as mars-lab's search trees have it (abmcts.ts)
          nodes: [
            {
              id: 0,
              parentId: null,
              depth: 0,
              agent: null,
              paramId: null,
              prompt: statement,
              completion: null,
              program: null,
              feedback: null,
              parseError: null,
              finish: null,
              public: null,
              private: null,
              score: 0,
              genObservation: null,
              expansion: null,
              advantage: null,
              shapedReward: null,
              trained: false,
              tokens: 0,
            },
            ...nodes,
          ],
          advantageRecomputed: true,
          parentsInferred: { byQuotedProgram: inferred, fromRoot: nodes.length - inferred },
          imported: { from: 'marti', folder: rel(t.folder) || '.', tree: t.index + 1 },
        });
      }
      run.metrics.append({
        step,
        // the newest call of the step (the calls' files are written as the search goes)
        time: stepTime,
        trees: trees.length,
        nodes: stepNodes,
        reward: stepScores.length ? stepScores.reduce((a, b) => a + b, 0) / stepScores.length : null,
        'reward/max': stepScores.length ? Math.max(...stepScores) : null,
        ...scalars?.values,
      });
    }
    for (const w of problems.summary()) run.warn(w);
    const imported = {
      from: 'marti' as const,
      source: dir,
      importedAt: new Date().toISOString(),
      files: [
        ...folders.map((f) => `${rel(f) || '.'}/llm_logs/`),
        ...['all_public_scores.csv', 'all_private_scores.csv'].filter((f) => fs.existsSync(path.join(dir, f))),
        ...events.map(rel),
      ],
      records,
      skipped: problems.count,
      advantages: { recomputed: true as const, ...MARTI_GROUP_NORM },
      trees: n
        ? `each prompt folder's calls in time order, cut into trees of ${n} (the k-th tree is step k)`
        : 'one tree per prompt folder (step 1); pass --nodes N to cut folders into trees of N',
      parents: "inferred: the newest earlier node whose ```python block the node's prompt quotes, else the root",
      scores: publicScores.size
        ? 'from all_public_scores.csv / all_private_scores.csv where they cover a tree'
        : 'unknown: MARTI does not write node scores in training',
      tensorboard: events.length
        ? {
            files: events.map(rel),
            scalars: tb.points,
            tags: tb.tags,
            leftOut: tb.otherAxis.length
              ? `${tb.otherAxis.length} tags on each agent's own step axis (agent_<i>_step/…), not the run's steps`
              : undefined,
          }
        : undefined,
    };
    const done = run.finish(
      'marti',
      imported,
      `Imported from MARTI's tree-search logs in ${dir}; trees, parents and advantages rebuilt (see run.json "imported").`,
    );
    return { ...done, records, skipped: problems.count, steps: allSteps.length, warnings: problems.summary() };
  } catch (err) {
    run.abort();
    throw err;
  }
}
