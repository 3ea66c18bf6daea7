/**
 * MARTI's instruction template for chat models (`"instructions": "chat"`): the system message is the language
 * reference (engine/marti/lang/: grammar, stages, built-ins, values — the closed syntax of syntax.ts listed from its
 * own tables) and one worked example from a training task (engine/marti/tasks/: the train side, never a held-out
 * task; a task whose problem is the one asked is skipped); the user's message is the node's prompt
 * (engine/marti/prompts.ts), one part a line. The answer is read tolerantly: a code fence is unwrapped, labels and
 * backticks are taken off each line, and the first line that parses is the program; prose around it is dropped
 * (and named as a repair). An answer with no parsing line keeps its first line that is not a preamble, whose parse
 * error the node then records.
 */
import { parse } from '../../../marti/lang/parser';
import { ARG_STAGES, EXPRESSION_KEYWORDS, UNARY_FUNCTIONS } from '../../../marti/lang/syntax';
import type { MartiFormat } from '../../../marti/format';
import { problemText } from '../../../marti/prompts';
import { generateTask, taskSeedStream, type MartiTask } from '../../../marti/tasks/generator';
import type { ChatDialect, ChatReading, ChatRequest } from '../../../policy/endpointPolicy';
import { isPreamble, stripFences, stripLabel } from './answerText';

/** The language reference a chat model is given (the issue: "the language reference goes into the prompt"). */
export function languageReference(): string {
  return [
    'The language. A program is stages joined by "|": the input flows through them left to right and the last stage gives the output.',
    'Values: integers; texts in double quotes holding letters and spaces only ("cat dog"); true and false; lists in brackets ([3,1,2], ["a","b"]).',
    `Stages: a built-in alone (${UNARY_FUNCTIONS.join(', ')}) applies to the whole value;`,
    '  map E: E for each element, x being the element;   filter E: the elements for which E is true;',
    '  apply E: E of the whole value, x being the value;   take E / drop E: the first E elements (or characters) / all but them;',
    '  while C B: while C holds, x becomes B.',
    `  (${ARG_STAGES.join(', ')} take their argument as a number, x, a list, a text or a bracketed expression: map (x * 2).)`,
    'Expressions: numbers, x, true, false, "text", [list], (E); + - * div mod (div floors; mod takes the sign of the divisor); < > = (no <=, >=, !=: write not (x = 6)); and, or, not; if C then A else B; a built-in before a value: len x, sum x, first x.',
    '+ also joins two lists or two texts. Built-ins: sort (numbers ascending, words alphabetically), reverse (a list or a text), sum, len (a list or a text), max, min, first, last, unique (first occurrences, in order), split (a text into its words), join (words into a text, one space between), upper, lower, abs, range (range n is [0, …, n-1]).',
    `The only words are ${[...ARG_STAGES, ...UNARY_FUNCTIONS, ...EXPRESSION_KEYWORDS].join(' ')} and the words inside texts; x is the only variable; there is no assignment and no other name.`,
  ].join('\n');
}

let examples: MartiTask[] | null = null;
function exampleTasks(): MartiTask[] {
  if (examples) return examples;
  const seeds = taskSeedStream(0, 'train');
  return (examples = [0, 1].map(() => generateTask(seeds.next().value as number, 'train')));
}

/** The worked example: a training task's problem and its target program, for a problem other than `asked`. */
export function martiExample(asked: string): { problem: string; program: string } {
  const t = exampleTasks().find((x) => !asked.includes(problemText(x))) ?? exampleTasks()[0]!;
  return { problem: problemText(t), program: t.target };
}

export function martiSystem(asked: string): string {
  const ex = martiExample(asked);
  return [
    "You write programs in a small pipeline language that are run on the problem's examples and on hidden tests. Reply with the program alone, on one line: no explanation, no Markdown, no code fence.",
    'A problem reads "problem: what to compute. examples: input gives output; …". When refining, the user also shows a previous program and the feedback its run got: write a better program.',
    '',
    languageReference(),
    '',
    'Example.',
    `User: ${ex.problem}\nprogram:`,
    `You: ${ex.program}`,
  ].join('\n');
}

/** The node's prompt text, one part a line, the trailing "program:" kept as the cue. */
export function martiUser(prompt: string): string {
  return prompt.replace(/\s*\b(examples:|previous program:|feedback:|program:\s*$)/g, '\n$1').trim();
}

/** The program from a chat answer (see the header). */
export function readProgram(answer: string, finish: 'stop' | 'length'): ChatReading {
  const repairs: string[] = [];
  const fenced = stripFences(answer);
  if (fenced.stripped) repairs.push('code fence stripped');
  const lines = fenced.text.split('\n').filter((l) => l.trim() !== '');
  const cleaned = lines.map((l) => stripLabel(l));
  const at = cleaned.findIndex((l) => l.text !== '' && parse(l.text).ok);
  let program: string | null;
  if (at >= 0) {
    program = cleaned[at]!.text;
    if (cleaned[at]!.stripped) repairs.push('label or backticks dropped');
    if (lines.length > 1) repairs.push('prose around the program dropped');
  } else {
    const first = cleaned.find((l, i) => l.text !== '' && !isPreamble(lines[i]!));
    program = first?.text ?? null;
    if (lines.length > 1) repairs.push('no line parses: the first line that is not a preamble kept');
  }
  const text = program ?? '';
  return { text: finish === 'stop' || at >= 0 ? `${text} <eos>`.trim() : text, program, repairs };
}

/** MARTI's dialect over `format` (the MARTI tokenizer): every prompt is a node's prompt. */
export function martiChat(format: MartiFormat): ChatDialect {
  return {
    chat(prompt: readonly number[]): ChatRequest | null {
      if (prompt[0] !== format.bos) return null;
      const text = format.tokenizer.decode(prompt.slice(1));
      return {
        messages: [
          { role: 'system', content: martiSystem(text) },
          { role: 'user', content: martiUser(text) },
        ],
        stop: [],
        read: readProgram,
      };
    },
  };
}
