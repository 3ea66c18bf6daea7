/**
 * The prompt layout of MARTI-MARS² nodes (docs/algorithms.md §3.2), one place for the trainer, the pretraining corpus and
 * the inspector. A prompt is a single message with no chat history:
 *
 *   child of the root   rolePrompt ⊕ problem ⊕ "program:"
 *   child of node n     rolePrompt ⊕ problem ⊕ "previous program:" n.program ⊕ "feedback:" feedback(n) ⊕ "program:"
 *
 * where problem = "problem: <statement>. examples: <input> gives <output>; … ." over the public tests. The problem is
 * always included [D]. The completion is the program text alone (the trainer ends it with EOS), so a loss mask over the
 * completion covers exactly the program. All text is in the word tokenizer's normal form; the words are in
 * martiVocabulary() except the role prompt's, which the trainer adds to its tokenizer.
 */
import type { EndpointGeneration } from '../policy/endpointPolicy';
import type { MartiFormat } from './format';
import { joinTokens, textTokens } from './lang/text';
import { valueTokens } from './lang/values';
import type { MartiTask } from './tasks/generator';
import { evaluateProgram, knownTextWord, type EvaluateOptions, type ProgramEvaluation } from './tasks/scoring';

export const PROMPT_WORDS = ['problem', 'examples', 'gives', 'program', 'previous', 'feedback', 'none'] as const;

export interface PromptOptions {
  /** Agent role prefix (§3.1: mars-lab's own [D]); empty by default. */
  rolePrompt?: string;
}

function problemTokens(task: MartiTask): string[] {
  const out = ['problem', ':', ...textTokens(task.statement), '.', 'examples', ':'];
  task.publicTests.forEach((t, i) => {
    if (i > 0) out.push(';');
    out.push(
      ...valueTokens(t.input, { knownWord: knownTextWord }),
      'gives',
      ...valueTokens(t.expected, { knownWord: knownTextWord }),
    );
  });
  out.push('.');
  return out;
}

/** The problem as agents see it: statement and public tests (never the private ones). */
export function problemText(task: MartiTask): string {
  return joinTokens(problemTokens(task));
}

/** Prompt of a root child (generator role): write a program from the problem. */
export function rootPrompt(task: MartiTask, opts: PromptOptions = {}): string {
  return joinTokens([...textTokens(opts.rolePrompt ?? ''), ...problemTokens(task), 'program', ':']);
}

/** Prompt of a refining child: the problem, the parent's program (null when it had none) and its feedback. */
export function refinePrompt(
  task: MartiTask,
  parentProgram: string | null,
  feedback: string,
  opts: PromptOptions = {},
): string {
  return joinTokens([
    ...textTokens(opts.rolePrompt ?? ''),
    ...problemTokens(task),
    'previous',
    'program',
    ':',
    ...(parentProgram === null || parentProgram.trim() === '' ? ['none'] : textTokens(parentProgram)),
    'feedback',
    ':',
    ...textTokens(feedback),
    'program',
    ':',
  ]);
}

/**
 * The program span of a completion (§3.2 extraction): its first line, trimmed; null when empty. Whether it parses is
 * decided by evaluateProgram, which scores a non-parsing span 0 with "no valid program" feedback.
 */
export function extractProgram(completion: string): string | null {
  const line = completion.split('\n')[0]!.trim();
  return line === '' ? null : line;
}

/**
 * A node's completion and its evaluation. The run's own model (and serve-model, whose text its tokens say exactly) is
 * read from its tokens, as always. An endpoint's answer that the tokens cannot hold is read from its text, losslessly:
 * the text is the completion the node keeps, a chat dialect's program (endpointPolicy.ts) is what is parsed, and a
 * program with a word MARTI's vocabulary lacks fails with that reason instead of running with the word dropped.
 */
export function readCompletion(
  fmt: MartiFormat,
  g: Pick<EndpointGeneration, 'tokens' | 'text' | 'program'>,
  task: MartiTask,
  opts: EvaluateOptions,
): { completion: string; evaluation: ProgramEvaluation } {
  const completion = g.text ?? fmt.decodeCompletion(g.tokens);
  const program = g.program !== undefined ? g.program : extractProgram(completion);
  const unknown = g.text !== undefined && program !== null ? unknownWord(fmt, program) : null;
  if (unknown === null) return { completion, evaluation: evaluateProgram(program, task, opts) };
  const failed = evaluateProgram(null, task, opts);
  return {
    completion,
    evaluation: {
      ...failed,
      parseError: {
        kind: 'parse',
        message: `unknown word ${unknown.word}: not in the MARTI vocabulary`,
        position: unknown.position,
      },
    },
  };
}

/** The first letter run of `program` that MARTI's tokenizer does not have (its text would not survive a prompt). */
function unknownWord(fmt: MartiFormat, program: string): { word: string; position: number } | null {
  for (const m of program.matchAll(/[A-Za-z]+/g)) {
    try {
      fmt.tokenizer.idOf(m[0]);
    } catch {
      return { word: m[0], position: m.index };
    }
  }
  return null;
}
