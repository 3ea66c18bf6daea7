/**
 * The host's code-tree methods (issue 31, item 7): the folders `mars-lab code tree --out DIR` wrote, for the Code trees
 * view. listCodeTrees lists those under `<home>/code-trees/` (where the command's `--out` help points, and where a
 * launch from the app writes); getCodeTrees reads one search's trees of a folder named by its path (checked like every
 * path from a window: hostGuards.ts pathProblem) or by its name under `<home>/code-trees/`. The lines are read with
 * their schema (engine/records/codeTree.ts): a line that does not fit is named with its file and line, never sent on.
 * A folder this host is growing (codeTreeLaunch.ts: checkCodeTasks, startCodeTree) is listed with its state.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../../base/userError';
import { jsonParseProblem } from '../../base/boundedText';
import { readRecord } from '../../records';
import { codeTreeLineSchema, codeTreeSummarySchema, type CodeTreeSummary } from '../../records/codeTree';
import type { ApiCodeTreeOutput, ApiCodeTreeFigures } from '../contract/contract';
import type { ApiHandlers } from './host';
import type { HostContext } from './hostContext';
import { createCodeTreeLaunch, type GrowingTree } from './codeTreeLaunch';
import { pathProblem, type WorkerSlots } from './hostGuards';
import type { RunLauncher } from '../workers/runLauncher';

type CodeTreeMethods = Pick<
  ApiHandlers,
  'listCodeTrees' | 'getCodeTrees' | 'checkCodeTasks' | 'startCodeTree' | 'stopCodeTree'
>;

/** Where the app looks for code-tree folders, and where a launch from the app writes one. */
export const CODE_TREES_DIR = 'code-trees';
const SEARCHES = ['plain', 'tplus'] as const;
type Search = (typeof SEARCHES)[number];
/**
 * A tree file larger than this is refused (164 HumanEval problems × 16 nodes is about 15 MB): its answer must stay
 * under what one answer may carry over the web socket (apiSocket.ts MAX_ANSWER_CHARS, 64 Mi characters).
 */
export const MAX_TREE_FILE_BYTES = 32 * 1024 * 1024;
const MAX_SUMMARY_BYTES = 1024 * 1024;
const MAX_LISTED = 500;

const treeFile = (dir: string, s: Search) => path.join(dir, `trees-${s}.jsonl`);

function readSummary(dir: string): CodeTreeSummary | null {
  const file = path.join(dir, 'summary.json');
  try {
    if (fs.statSync(file).size > MAX_SUMMARY_BYTES) return null;
    const parsed = codeTreeSummarySchema.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null; // absent or damaged: the trees still read
  }
}

function describe(dir: string, grown?: GrowingTree): ApiCodeTreeOutput | null {
  const searches = SEARCHES.filter((s) => fs.existsSync(treeFile(dir, s)));
  if (searches.length === 0 && !grown) return null;
  const summary = readSummary(dir);
  const times = [...searches.map((s) => treeFile(dir, s)), path.join(dir, 'summary.json')].flatMap((f) => {
    try {
      return [fs.statSync(f).mtimeMs];
    } catch {
      return [];
    }
  });
  return {
    path: dir,
    name: path.basename(dir),
    searches,
    model: summary?.model ?? null,
    tasks: summary?.tasks ?? null,
    problems: summary?.problems ?? null,
    modifiedAt: new Date(times.length ? Math.max(...times) : Date.now()).toISOString(),
    state: grown?.state ?? null,
    note: grown?.note ?? null,
  };
}

/** The folder a request names: a name under `<home>/code-trees/`, or a path a window may use. */
function folderOf(ctx: HostContext, given: string): string {
  const named = /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(given) && !given.includes('..');
  const dir = named ? path.join(ctx.home, CODE_TREES_DIR, given) : given;
  if (!named && !path.isAbsolute(given)) {
    throw new UserError(`${given}: give an absolute folder, or the name of a folder in ${CODE_TREES_DIR}/ of the home`);
  }
  const problem = pathProblem(dir, ctx.roots);
  if (problem) throw new UserError(problem);
  if (!fs.statSync(dir).isDirectory()) throw new UserError(`${given} is a file: give the folder code tree --out wrote`);
  return fs.realpathSync(dir);
}

function readTrees(file: string) {
  const size = fs.statSync(file).size;
  if (size > MAX_TREE_FILE_BYTES) {
    throw new UserError(
      `${file} is ${Math.round(size / 2 ** 20)} MiB, more than the ${MAX_TREE_FILE_BYTES / 2 ** 20} MiB the app reads; ` +
        'grow fewer problems a folder (code tree --problems)',
    );
  }
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((text, i) => {
      if (text.trim() === '') return [];
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (err) {
        throw new UserError(`${file}: line ${i + 1} is not JSON (${jsonParseProblem(err)})`);
      }
      return [readRecord(codeTreeLineSchema, value, `${file}: line ${i + 1}`)];
    });
}

export function createCodeTreeMethods(
  ctx: HostContext,
  launcher: RunLauncher,
  slots: WorkerSlots,
): { handlers: CodeTreeMethods; close: () => void } {
  const folder = path.join(ctx.home, CODE_TREES_DIR);
  const launch = createCodeTreeLaunch(ctx, launcher, slots);
  const handlers: CodeTreeMethods = {
    ...launch.handlers,

    async listCodeTrees() {
      const names = new Set(launch.growing.keys());
      if (fs.existsSync(folder)) {
        for (const d of fs.readdirSync(folder, { withFileTypes: true }).slice(0, MAX_LISTED)) {
          if (d.isDirectory()) names.add(d.name);
        }
      }
      const outputs = [...names]
        .flatMap((name) => {
          const out = describe(path.join(folder, name), launch.growing.get(name));
          return out ? [out] : [];
        })
        .sort((a, b) => b.modifiedAt.localeCompare(a.modifiedAt) || a.name.localeCompare(b.name));
      return { folder, outputs };
    },

    async getCodeTrees(req) {
      const dir = folderOf(ctx, req.path);
      const out = describe(dir);
      if (!out || out.searches.length === 0) {
        throw new UserError(`${req.path} holds no trees-plain.jsonl or trees-tplus.jsonl (code tree --out)`);
      }
      const search = req.search ?? out.searches[0]!;
      if (!out.searches.includes(search)) {
        throw new UserError(`${req.path} has no ${search} trees (it holds: ${out.searches.join(', ')})`);
      }
      const summary = readSummary(dir);
      const figures = summary?.[search];
      return {
        ...out,
        search,
        isolation: summary?.isolation ?? null,
        figures: figures && typeof figures === 'object' ? (figures as ApiCodeTreeFigures) : null,
        trees: readTrees(treeFile(dir, search)),
      };
    },
  };
  return { handlers, close: () => launch.close() };
}
