/**
 * Growing code trees from the app (issue 31, item 7): the Launch view's "Grow code trees" names a HumanEval or MBPP task
 * file (checked here as `code tree` reads it: checkCodeTasks), a listed model or an endpoint, and the search; the host
 * starts `mars-lab code tree … --out <home>/code-trees/<name>` through its launcher (a utility process in the app, a
 * child process in web mode) within its worker slots, and the Code trees view lists the folder with its state while it
 * grows. The task file is a path a window names, so it is checked like every such path (hostGuards.ts pathProblem);
 * a model is named by its id in the Models list (modelMethods.ts locateModel), never by a path the host did not check.
 * The sandbox's opt-out is not offered here: without bubblewrap the command refuses, and the launch says why.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../../base/userError';
import { loadTaskFile, type CodeTask } from '../../code/tasks/taskFile';
import { CATALOGUE } from '../../fetch/catalogue';
import { cachedArtefactPath } from '../../fetch/fetchArtefact';
import type { ApiParsedRequest } from '../contract/contract';
import type { RunLauncher, RunProcess } from '../workers/runLauncher';
import type { HostContext } from './hostContext';
import { pathProblem, type WorkerSlots } from './hostGuards';
import { locateModel } from './modelMethods';

/** A task file larger than this is refused (HumanEval is 160 KB gzipped; MBPP's full set under 1 MB). */
const MAX_TASK_FILE_BYTES = 64 * 1024 * 1024;
const NOTE_CHARS = 600;

export interface GrowingTree {
  state: 'running' | 'stopped' | 'failed' | 'done';
  note: string;
}

/** The task file a window names: `humaneval` (the fetched copy), or a path inside the allowed folders. */
export async function taskFileOf(ctx: Pick<HostContext, 'roots'>, given: string): Promise<string> {
  const named = CATALOGUE.find((a) => a.kind === 'data' && a.name === given);
  if (named) {
    const cached = await cachedArtefactPath(named);
    if (!cached) throw new UserError(`${given}: not fetched yet; run \`mars-lab data fetch ${given}\` first`);
    return cached;
  }
  if (!path.isAbsolute(given)) {
    throw new UserError(`${given}: give the task file's absolute path, or humaneval for the copy data fetch brought`);
  }
  const problem = pathProblem(given, ctx.roots);
  if (problem) throw new UserError(problem);
  const real = fs.realpathSync(given);
  const st = fs.statSync(real);
  if (!st.isFile()) throw new UserError(`${given} is a folder: give a .jsonl or .jsonl.gz task file`);
  if (st.size > MAX_TASK_FILE_BYTES) throw new UserError(`${given}: larger than the 64 MiB a task file may be`);
  return real;
}

export function readTasks(file: string, given: string, format: 'auto' | 'humaneval' | 'mbpp'): CodeTask[] {
  try {
    return loadTaskFile(file, format);
  } catch (err) {
    // the reader names the file by the path it opened (the cache's, for humaneval): say it as the window gave it
    if (err instanceof UserError) throw new UserError(err.message.replace(`--tasks ${file}`, given));
    throw err;
  }
}

const stamp = (d: Date) => d.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);

export function createCodeTreeLaunch(ctx: HostContext, launcher: RunLauncher, slots: WorkerSlots) {
  const growing = new Map<string, GrowingTree>();
  const procs = new Map<string, RunProcess>();
  const stopping = new Set<string>();
  const folder = path.join(ctx.home, 'code-trees');

  async function startCodeTree(req: ApiParsedRequest<'startCodeTree'>): Promise<{ name: string; path: string }> {
    if (!!req.model === !!req.endpoint) throw new UserError('give a model from the Models list or an endpoint');
    const file = await taskFileOf(ctx, req.tasks);
    const tasks = readTasks(file, req.tasks, req.format);
    const base = path
      .basename(file)
      .replace(/\.jsonl(\.gz)?$/, '')
      .replace(/[^A-Za-z0-9._-]/g, '-');
    const name = req.name ?? `${stamp(new Date())}-${base}`.slice(0, 80);
    const out = path.join(folder, name);
    if (fs.existsSync(out) || growing.get(name)?.state === 'running') {
      throw new UserError(`${name}: a code-tree folder of that name exists in ${folder}; choose another name`);
    }
    const who = req.model
      ? [`--model=${await locateModel(ctx, req.model)}`]
      : [
          `--endpoint=${req.endpoint!.baseUrl}`,
          `--endpoint-model=${req.endpoint!.model}`,
          ...(req.endpoint!.apiKeyEnv ? [`--api-key-env=${req.endpoint!.apiKeyEnv}`] : []),
        ];
    const args = [
      'code',
      'tree',
      `--tasks=${file}`,
      `--format=${tasks[0]!.format}`,
      ...who,
      `--nodes=${req.nodes}`,
      `--search=${req.search}`,
      ...(req.problems ? [`--problems=${req.problems}`] : []),
      ...(req.greedy ? [] : ['--no-greedy']),
      `--out=${out}`,
      '--json',
    ];
    const release = slots.take('grow code trees');
    fs.mkdirSync(folder, { recursive: true });
    const entry: GrowingTree = { state: 'running', note: `starting: ${tasks.length} problems in the task file` };
    growing.set(name, entry);
    let lastErr = '';
    let proc: RunProcess;
    try {
      proc = launcher.launch(args, {
        onStdoutLine: () => {},
        onStderr: (text) => {
          lastErr = (lastErr + text).slice(-4 * NOTE_CHARS);
          const line = lastErr
            .split(/[\r\n]/)
            .filter((l) => l.trim() !== '')
            .at(-1);
          if (line && entry.state === 'running') entry.note = line.slice(0, NOTE_CHARS);
        },
        onExit: (code) => {
          release();
          procs.delete(name);
          const stopped = stopping.delete(name);
          entry.state = code === 0 ? 'done' : stopped ? 'stopped' : 'failed';
          const last =
            lastErr
              .split(/[\r\n]/)
              .filter((l) => l.trim() !== '')
              .at(-1) ?? '';
          entry.note =
            code === 0
              ? 'finished'
              : stopped
                ? 'stopped from the app; what it wrote so far stays'
                : `ended with code ${code ?? 'a signal'}: ${last}`.slice(0, NOTE_CHARS);
        },
      });
    } catch (err) {
      release();
      growing.delete(name);
      throw err;
    }
    procs.set(name, proc);
    return { name, path: out };
  }

  return {
    growing,
    handlers: {
      async checkCodeTasks(req: ApiParsedRequest<'checkCodeTasks'>) {
        const file = await taskFileOf(ctx, req.tasks);
        const tasks = readTasks(file, req.tasks, req.format);
        return {
          path: file,
          format: tasks[0]!.format,
          problems: tasks.length,
          first: tasks.slice(0, 3).map((t) => t.id),
        };
      },
      startCodeTree,
      async stopCodeTree({ name }: ApiParsedRequest<'stopCodeTree'>) {
        const proc = procs.get(name);
        if (!proc) return { stopped: false };
        stopping.add(name);
        proc.terminate();
        return { stopped: true };
      },
    },
    close(): void {
      for (const p of procs.values()) p.terminate();
    },
  };
}
