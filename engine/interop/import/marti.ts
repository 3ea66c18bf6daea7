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
 *
 * This file holds the import's steps; a call's log is read in martiCalls.ts, trees and their records are built in
 * martiTrees.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../../base/userError';
import { findFiles, type ImportOptions, type ImportResult, ProblemLog, ProgressMeter } from './common';
import { MARTI_GROUP_NORM } from './groups';
import { ImportedRunWriter, type ImportedInfo } from './importedRun';
import { LOG_NAME } from './martiCalls';
import { martiTreeRecord, planTrees, readTreeCalls, type ScoreTable, type TreeContext } from './martiTrees';
import { EVENT_FILE, scalarsByStep } from './tfevents';

export { pythonBlock } from './martiCalls';
export { treeScores } from './martiTrees';

/** `<save_path>/all_{public,private}_scores.csv`: score by prompt folder and node index. */
function readScores(file: string, problems: ProblemLog, rel: (f: string) => string): ScoreTable {
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

/** The folder to import, its call logs and its TensorBoard event files; a folder with neither is refused. */
function martiSources(opts: ImportOptions): { dir: string; logs: string[]; events: string[] } {
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
  return { dir, logs, events };
}

/** run.json's "imported": what was read and how trees, parents, scores and advantages were rebuilt. */
function importedInfo(
  dir: string,
  read: { folders: string[]; events: string[]; records: number; skipped: number },
  n: number | undefined,
  publicScores: ScoreTable,
  tb: ReturnType<typeof scalarsByStep>,
  rel: (f: string) => string,
): ImportedInfo {
  const { folders, events, records } = read;
  return {
    from: 'marti' as const,
    source: dir,
    importedAt: new Date().toISOString(),
    files: [
      ...folders.map((f) => `${rel(f) || '.'}/llm_logs/`),
      ...['all_public_scores.csv', 'all_private_scores.csv'].filter((f) => fs.existsSync(path.join(dir, f))),
      ...events.map(rel),
    ],
    records,
    skipped: read.skipped,
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
}

export async function importMarti(opts: ImportOptions): Promise<ImportResult> {
  const { dir, logs, events } = martiSources(opts);
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
  const n = opts.nodesPerTree;
  const { byFolder, folders, treesByStep } = planTrees(logs, n, problems, rel);
  const treeContext: TreeContext = { publicScores, privateScores, byFolder, nodesPerTree: n, problems, rel };

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
        const read = readTreeCalls(t, problems, rel, meter, stepTime);
        stepTime = read.stepTime;
        const calls = read.calls;
        if (calls.length === 0) continue;
        records += calls.length;
        const tree = martiTreeRecord(step, t, calls, treeContext);
        stepScores.push(...tree.known);
        stepNodes += tree.nodes;
        run.trajectories.append(tree.record);
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
    const imported = importedInfo(dir, { folders, events, records, skipped: problems.count }, n, publicScores, tb, rel);
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
