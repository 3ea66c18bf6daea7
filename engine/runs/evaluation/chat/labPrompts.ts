/**
 * The lab's own prompts as a chat model receives them (issue 33, item 2: the playground's "lab prompt" picker), so a
 * user sees what a real model does with them before training it: MARS's System 2 on a question and System 1 on a
 * purpose and its pages, in the instruction templates an endpoint evaluation uses (marsChat.ts); a MARTI agent on a
 * toy-language task (martiChat.ts); and a MARTI agent on a Python problem, in the chat `code tree` sends
 * (engine/marti/python/pythonPrompts.ts) for the task file's first problem (HumanEval/0 when HumanEval is fetched).
 * The examples come from the first training world and training tasks, as the templates' worked examples do.
 */
import type { CodeTask } from '../../../code/tasks/taskFile';
import { rootChat } from '../../../marti/python/pythonPrompts';
import { rootPrompt } from '../../../marti/prompts';
import { generateTask, taskSeedStream } from '../../../marti/tasks/generator';
import { marsExample, sys1System, sys1User, sys2System } from './marsChat';
import { martiSystem, martiUser } from './martiChat';

export interface LabPrompt {
  id: string;
  label: string;
  system: string;
  user: string;
}

/** A Python problem for the MARTI prompt when no task file is at hand: HumanEval's format, written here. */
const FALLBACK_TASK: CodeTask = {
  id: 'example/0',
  format: 'humaneval',
  prompt:
    'def running_max(numbers: list[int]) -> list[int]:\n    """The largest number seen so far at each position.\n    >>> running_max([1, 3, 2, 5])\n    [1, 3, 3, 5]\n    """\n',
  entryPoint: 'running_max',
  canonical: '',
  test: '',
  tests: [],
  setup: '',
  line: 1,
};

export function labPrompts(pythonTask: CodeTask = FALLBACK_TASK): LabPrompt[] {
  const shown = marsExample('');
  const asked = marsExample(shown.question);
  const seeds = taskSeedStream(1, 'train');
  const task = generateTask(seeds.next().value as number, 'train');
  const martiPrompt = rootPrompt(task);
  return [
    { id: 'mars-sys2', label: 'MARS System 2 on a question', system: sys2System(shown), user: asked.question },
    {
      id: 'mars-sys1',
      label: 'MARS System 1 on a purpose and its pages',
      system: sys1System(shown),
      user: sys1User(asked.purpose, asked.pages),
    },
    {
      id: 'marti-toy',
      label: 'MARTI agent on a toy-language task',
      system: martiSystem(martiPrompt),
      user: martiUser(martiPrompt),
    },
    {
      id: 'marti-python',
      label: `MARTI agent on a Python problem (${pythonTask.id})`,
      system: '',
      user: rootChat(pythonTask)[0]!.content,
    },
  ];
}
