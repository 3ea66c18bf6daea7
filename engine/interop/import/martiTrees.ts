/**
 * Search trees rebuilt from MARTI's calls for `import marti` (marti.ts): a prompt folder's calls in time order cut into
 * trees of --nodes (the k-th tree is step k), each node's parent inferred from the program its prompt quotes, scores
 * from the evaluation CSVs where they cover a tree, advantages recomputed per tree, and the tree's `marti.tree` record.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { martiTreeRoot } from '../../pure/martiTreeRoot';
import { RECORD_VERSION } from '../../records/version';
import type { ProblemLog, ProgressMeter } from './common';
import { MARTI_GROUP_NORM, recomputeAdvantages } from './groups';
import { LOG_NAME, pythonBlock, readCall, type Call } from './martiCalls';

/** One search tree's calls: its prompt folder, its index in that folder (from 0), its log files in time order. */
export interface TreeSource {
  folder: string;
  index: number;
  files: string[];
}

/** Scores by prompt folder and node index, from `all_{public,private}_scores.csv`. */
export type ScoreTable = Map<string, Map<number, number>>;

/** What building a tree's record needs besides its calls. */
export interface TreeContext {
  publicScores: ScoreTable;
  privateScores: ScoreTable;
  /** The log files of each prompt folder. */
  byFolder: Map<string, string[]>;
  nodesPerTree: number | undefined;
  problems: ProblemLog;
  rel: (f: string) => string;
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

function taskIdOf(statement: string): string {
  return `marti:${createHash('sha1').update(statement).digest('hex').slice(0, 12)}`;
}

/** The prompt folders (by path) and their trees by step. */
export function planTrees(
  logs: readonly string[],
  n: number | undefined,
  problems: ProblemLog,
  rel: (f: string) => string,
): { byFolder: Map<string, string[]>; folders: string[]; treesByStep: Map<number, TreeSource[]> } {
  // Calls by prompt folder (the folder above llm_logs), in time order (the file name's stamp, then the name).
  const byFolder = new Map<string, string[]>();
  for (const f of logs) {
    const folder = path.dirname(path.dirname(f));
    byFolder.set(folder, [...(byFolder.get(folder) ?? []), f]);
  }
  const folders = [...byFolder.keys()].sort((a, b) => rel(a).localeCompare(rel(b), undefined, { numeric: true }));

  // Trees by step: a folder's calls cut into consecutive trees of `nodesPerTree` (the k-th is step k), or one tree.
  const treesByStep = new Map<number, TreeSource[]>();
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
  return { byFolder, folders, treesByStep };
}

/** A tree's calls, read in order (a file that is not a call is told to `problems`), and the step's time raised to theirs. */
export function readTreeCalls(
  t: TreeSource,
  problems: ProblemLog,
  rel: (f: string) => string,
  meter: ProgressMeter,
  stepTimeBefore: number,
): { calls: Call[]; stepTime: number } {
  let stepTime = stepTimeBefore;
  const calls: Call[] = [];
  for (const f of t.files) {
    const c = readCall(f, problems, rel);
    const st = fs.statSync(f);
    meter.read(f, st.size);
    stepTime = Math.max(stepTime, st.mtimeMs / 1000);
    if (c) calls.push(c);
  }
  return { calls, stepTime };
}

/** The tree's nodes (ids from 1), each parent the newest earlier node whose program its prompt quotes, else the root. */
function treeNodes(
  calls: readonly Call[],
  scores: readonly (number | null)[],
  advantages: readonly (number | null)[],
  priv: Map<number, number> | undefined,
  rel: (f: string) => string,
) {
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
      private: priv?.has(k) ? { passed: 0, total: 0, score: priv.get(k)! } : null,
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
  return { nodes, inferred };
}

/** The `marti.tree` record of one tree's calls, with its known scores and its node count. */
export function martiTreeRecord(
  step: number,
  t: TreeSource,
  calls: readonly Call[],
  ctx: TreeContext,
): { record: Record<string, unknown>; known: number[]; nodes: number } {
  const { rel } = ctx;
  const folderName = path.basename(t.folder);
  // Scores from the CSVs only where they cover this tree exactly (one search in the folder).
  const pub = ctx.publicScores.get(folderName);
  const priv = ctx.privateScores.get(folderName);
  const covered = (m: Map<number, number> | undefined) =>
    !!m && t.index === 0 && ctx.byFolder.get(t.folder)!.length === calls.length && m.size === calls.length;
  const scores: (number | null)[] = calls.map((_, k) => (covered(pub) ? (pub!.get(k) ?? null) : null));
  const advantages = recomputeAdvantages(scores, MARTI_GROUP_NORM);
  const { nodes, inferred } = treeNodes(calls, scores, advantages, covered(priv) ? priv : undefined, rel);
  const statement = calls[0]!.prompt;
  // Fresh attempts (children of the root) at different prompts: this "tree" holds several searches (several
  // steps' problems in one prompt folder); --nodes cuts them apart.
  const problemsHere = new Set(nodes.filter((x) => x.parentId === 0).map((x) => x.prompt)).size;
  if (problemsHere > 1 && !ctx.nodesPerTree) {
    ctx.problems.add(
      `${rel(t.folder) || '.'}: calls on ${problemsHere} different prompts made one tree: pass --nodes N (workflow_args.max_num_nodes) to cut the folder into one tree per search`,
    );
  }
  const agents = [...new Set(calls.map((c) => c.agent))];
  const known = scores.filter((s): s is number => s !== null);
  const record = {
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
    agentShares: Object.fromEntries(agents.map((a) => [a, calls.filter((c) => c.agent === a).length / calls.length])),
    // the root holds the problem, no program: score 0, as mars-lab's search trees have it (abmcts.ts)
    nodes: [martiTreeRoot(statement, 0), ...nodes],
    advantageRecomputed: true,
    parentsInferred: { byQuotedProgram: inferred, fromRoot: nodes.length - inferred },
    imported: { from: 'marti', folder: rel(t.folder) || '.', tree: t.index + 1 },
  };
  return { record, known, nodes: nodes.length };
}
