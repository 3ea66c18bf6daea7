/**
 * One MARTI LLM call as `import marti` (marti.ts) reads it: `llm_logs/log_<stamp>_<agent>.txt`, the JSON
 * generate_fn_async writes, checked with zod; the action's text, token count and log-probabilities, and the program in
 * its ```python block.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { ProblemLog } from './common';
import { parsePythonJson } from './jsonLines';
import { jsonParseProblem } from '../../base/boundedText';

export const LOG_NAME = /^log_(\d{8}_\d{6}_\d{3})_(.+)\.txt$/;
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

export interface Call {
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

export function readCall(file: string, problems: ProblemLog, rel: (f: string) => string): Call | null {
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
    problems.add(`${rel(file)}:1: not JSON (${jsonParseProblem(err)}); file skipped`);
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
