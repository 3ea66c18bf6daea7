/**
 * The lines `mars-lab code tree --out DIR` writes for its trees (trees-plain.jsonl, trees-tplus.jsonl): one per
 * problem, every node of its tree, typed by engine/records/codeTree.ts, whose schema the app reads them back with. With
 * each problem its prompt and format, and with each node its tests' outcomes, so the app's tree view can show the
 * problem, each test's verdict and error, and a refinement beside its parent's program.
 */
import type { CodeTask } from '../../code/tasks/taskFile';
import type { CodeTreeLine } from '../../records/codeTree';
import type { PythonTree } from './pythonTrees';

export function treeLines(trees: readonly PythonTree[], tasks: readonly CodeTask[]): CodeTreeLine[] {
  const taskOf = new Map(tasks.map((t) => [t.id, t]));
  return trees.map((t) => {
    const task = taskOf.get(t.treeId);
    return {
      task_id: t.treeId,
      ...(task ? { prompt: task.prompt, format: task.format, entry_point: task.entryPoint } : {}),
      nodes: t.nodes.slice(1).map((n) => ({
        id: n.id,
        parent: n.parentId ?? 0,
        depth: n.depth,
        agent: n.agentId ?? '',
        passed: n.privateScore === 1,
        score: n.score,
        status: n.payload!.status,
        reason: n.payload!.reason,
        program: n.program,
        reply: n.payload!.reply,
        reply_tokens: n.payload!.replyTokens,
        finish: n.payload!.finish,
        feedback: n.payload!.feedback,
        prompt: n.payload!.chat.at(-1)!.content,
        tests: n.payload!.tests,
      })),
    };
  });
}
