/**
 * The chats of a MARTI tree over Python problems (issue 31, item 4), and reading the program back out of a reply.
 *
 *   child of the root   one user message: the problem (HumanEval's signature and docstring in a ```python block, or
 *                       MBPP's statement and its first test), and what to write: the whole function in one block;
 *   child of node n     one user message: the problem, "Your previous code:" n's program in a block, "Here are the
 *                       results based on the code above." and n's feedback (pythonNodes.ts), then the instruction to
 *                       reflect on what was wrong and write the corrected function.
 *
 * The refinement follows the released MARTI-MARS² prompt's layout (TsinghuaC3I/MARTI,
 * marti/agent_workflows/third_party/mcts_utils/code_prompt.py `transform_feedback_prompt` and `next_task_prompt`:
 * a single last user message, the previous code in a fence, per-example "Result: Correct/Wrong" and a "# Summary"
 * line, then "reflect … and write a new … function inside a ```python block"); the wording here is mars-lab's own.
 * Two choices differ, both as in the toy language's prompts (docs/algorithms.md §3.2): the problem is always included
 * (the released prompt includes it only when no code was extracted), and there is no per-agent role prompt unless
 * the caller gives one (the released scripts give none).
 *
 * Program extraction: the last fenced block (```python, ```py or a bare ```) that defines the entry point, else the
 * last block (the released code's rule, which alone would pick a trailing block of usage examples); a block the reply
 * opened and never closed (cut at the token budget) runs to the end. No block: no program (score 0, "no code block").
 */
import type { ChatMessage } from '../../model/chat/chatTemplate';
import type { CodeTask } from '../../code/tasks/taskFile';

/** The problem as the model reads it. */
export function problemText(task: CodeTask): string {
  // a generated problem with its tests as asserts (generatedTasks.ts) is shown as HumanEval's are: its stub to complete
  if (task.format === 'humaneval' || task.entryPoint !== null) {
    return (
      'Complete the following Python function. Reply with the whole function, its imports included, in one ```python ' +
      `code block.\n\n\`\`\`python\n${task.prompt.trimEnd()}\n\`\`\``
    );
  }
  const example = task.tests[0] ? `\nYour code should pass this test:\n\n\`\`\`python\n${task.tests[0]}\n\`\`\`` : '';
  return `${task.prompt.trim()}${example}\n\nReply with the function in one \`\`\`python code block.`;
}

export function rootChat(task: CodeTask, rolePrompt = ''): ChatMessage[] {
  return [{ role: 'user', content: withRole(rolePrompt, problemText(task)) }];
}

/** The refinement of a node: its program (null when its reply had none) and the feedback its tests gave. */
export function refineChat(
  task: CodeTask,
  parentCode: string | null,
  feedback: string,
  rolePrompt = '',
): ChatMessage[] {
  const previous =
    parentCode === null
      ? "Your previous answer doesn't include any code."
      : `Your previous code:\n\`\`\`python\n${parentCode.trimEnd()}\n\`\`\`\n\nHere are the results based on the code above.\n${feedback}`;
  const content =
    `${problemText(task)}\n\n${previous}\n\n` +
    'Reflect on what was wrong, then write the corrected function in one ```python code block.';
  return [{ role: 'user', content: withRole(rolePrompt, content) }];
}

function withRole(rolePrompt: string, content: string): string {
  return rolePrompt.trim() === '' ? content : `${rolePrompt.trim()}\n\n${content}`;
}

const FENCE = /```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n/g;

/** The bodies of a reply's Python (or unlabelled) fenced blocks, in order; one left open runs to the reply's end. */
function codeBlocks(reply: string): string[] {
  const blocks: string[] = [];
  let at = 0;
  for (;;) {
    FENCE.lastIndex = at;
    const open = FENCE.exec(reply);
    if (!open) break;
    const start = open.index + open[0].length;
    const close = reply.indexOf('```', start);
    const lang = open[1]!.toLowerCase();
    const body = reply.slice(start, close < 0 ? reply.length : close);
    if (['', 'python', 'py', 'python3'].includes(lang) && body.trim() !== '') blocks.push(body);
    if (close < 0) break;
    at = close + 3;
  }
  return blocks;
}

/**
 * The program in a reply, null when it has no code block. The last block that defines `entryPoint` (any `def` when
 * null), else the last block: the released code takes the last block, but a chat model often ends with a block of
 * usage examples after the function, which would score the example instead of the answer.
 */
export function extractCode(reply: string, entryPoint: string | null = null): string | null {
  const blocks = codeBlocks(reply);
  const def = new RegExp(`^\\s*(async\\s+)?def\\s+${entryPoint ?? '\\w+'}\\s*\\(`, 'm');
  const body = blocks.filter((b) => def.test(b)).at(-1) ?? blocks.at(-1);
  return body === undefined ? null : body.replace(/\s+$/, '') + '\n';
}
