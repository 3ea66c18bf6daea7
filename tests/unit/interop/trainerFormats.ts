/**
 * Fixture generators for the interop tests: they write files in the formats verl and MARTI write, byte for byte as
 * their writer code does (cited at each), so the importers are tested against those formats, not against ours.
 *
 * Python's json.dumps, which both use: separators ", " and ": " (indent=None), or "," at line ends and ": " with an
 * indent; ensure_ascii=True escapes every non-ASCII character as \uXXXX (verl passes ensure_ascii=False); float NaN
 * and infinities are written NaN, Infinity, -Infinity; floats are written with repr (1.0 stays "1.0").
 */
import fs from 'node:fs';
import path from 'node:path';

/** A float Python would print with a decimal point (1.0), as opposed to an int. */
export class PyFloat {
  constructor(readonly value: number) {}
}

function pyNumber(v: number | PyFloat): string {
  const x = v instanceof PyFloat ? v.value : v;
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  const s = String(x);
  return v instanceof PyFloat && Number.isInteger(x) ? `${s}.0` : s;
}

function pyString(s: string, ensureAscii: boolean): string {
  const json = JSON.stringify(s);
  return ensureAscii
    ? json.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    : json;
}

/** Python's json.dumps(value, ensure_ascii=…, indent=…). */
export function pyDumps(value: unknown, opts: { ensureAscii?: boolean; indent?: number } = {}, level = 0): string {
  const ensureAscii = opts.ensureAscii ?? true;
  const ind = opts.indent;
  const nl = (l: number) => (ind === undefined ? '' : '\n' + ' '.repeat(ind * l));
  const sep = ind === undefined ? ', ' : ',';
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number' || value instanceof PyFloat) return pyNumber(value);
  if (typeof value === 'string') return pyString(value, ensureAscii);
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return '[' + value.map((v) => nl(level + 1) + pyDumps(v, opts, level + 1)).join(sep) + nl(level) + ']';
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return '{}';
  return (
    '{' +
    entries.map(([k, v]) => nl(level + 1) + pyString(k, ensureAscii) + ': ' + pyDumps(v, opts, level + 1)).join(sep) +
    nl(level) +
    '}'
  );
}

// ---- verl ---------------------------------------------------------------------------------------------------------

export interface VerlSample {
  input: string;
  output: string;
  gts: unknown;
  score: number | PyFloat;
  /** reward_extra_info keys with one value per sample (acc, pred, request_id, …). */
  extra?: Record<string, unknown>;
}

/**
 * verl's RayPPOTrainer._dump_generations (verl/trainer/ppo/ray_trainer.py): `<dump_path>/<global_steps>.jsonl`, each
 * line `json.dumps({input, output, gts, score, step, **extras}, ensure_ascii=False)` (since 2026 in a background
 * thread, `_write_generations`, one `json.dumps(…, default=str) + "\n"` per line: the same bytes).
 */
export function writeVerlStep(dumpDir: string, step: number, samples: readonly VerlSample[]): string {
  fs.mkdirSync(dumpDir, { recursive: true });
  const lines = samples.map((s) =>
    pyDumps(
      { input: s.input, output: s.output, gts: s.gts, score: s.score, step, ...(s.extra ?? {}) },
      { ensureAscii: false },
    ),
  );
  const file = path.join(dumpDir, `${step}.jsonl`);
  fs.writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

/**
 * verl's FileLogger (verl/utils/tracking.py): one line per logged step. verl main (2026-08) writes
 * `orjson.dumps({"step": N, "data": metrics})` (compact, NaN as null); a variant with `elapsed_seconds` writes
 * `json.dumps({"step": N, "elapsed_seconds": t, "data": metrics})`.
 */
export function writeVerlFileLogger(
  file: string,
  lines: readonly { step: number; elapsed?: number; data: Record<string, number | PyFloat> }[],
): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const orjson = (l: { step: number; data: Record<string, number | PyFloat> }) =>
    JSON.stringify({
      step: l.step,
      data: Object.fromEntries(Object.entries(l.data).map(([k, v]) => [k, v instanceof PyFloat ? v.value : v])),
    });
  fs.writeFileSync(
    file,
    lines
      .map(
        (l) =>
          (l.elapsed === undefined
            ? orjson(l)
            : pyDumps({ step: l.step, elapsed_seconds: new PyFloat(l.elapsed), data: l.data })) + '\n',
      )
      .join(''),
  );
}

/** What verl's rollout.n samples of one prompt look like in the dump: the prompt decoded with its chat-template text. */
export function chatPrompt(question: string): string {
  return `system\nYou are a helpful assistant.\nuser\n${question} Let's think step by step and output the final answer after "####".\nassistant\n`;
}

// ---- MARTI --------------------------------------------------------------------------------------------------------

export interface MartiCall {
  agentId: string;
  /** The chat-templated prompt text (apply_chat_template(tokenize=False)). */
  messages: string;
  actionText: string;
  actionTokens: number[];
  /** One per action token (the prompt's positions are written as 0.0 before them), or null. */
  actionLogProbs: number[] | null;
  /** YYYYmmdd_HHMMSS_mmm */
  stamp: string;
}

/**
 * MARTI's generate_fn_async (marti/agent_workflows/third_party/mcts_utils/utils.py): each call writes
 * `<save_path>/<prompt_id>/llm_logs/log_<stamp>_<agent_id>.txt` with
 * `json.dumps({"agent_id": action, "result": dataclasses.asdict(GenerationResult)}, indent=4)`; the prompt's token ids
 * are the first of sequence_ids and rollout_log_probs has 0.0 for each of them.
 */
export function writeMartiCall(saveDir: string, promptId: number, c: MartiCall): string {
  const dir = path.join(saveDir, String(promptId), 'llm_logs');
  fs.mkdirSync(dir, { recursive: true });
  for (const sub of ['costs', 'checkpoints']) {
    fs.mkdirSync(path.join(saveDir, String(promptId), sub), { recursive: true });
  }
  const promptIds = Array.from({ length: 5 }, (_, i) => 100 + i);
  const result = {
    request: { messages: c.messages },
    action_text: c.actionText,
    action_tokens: c.actionTokens,
    rollout_log_probs: c.actionLogProbs === null ? null : [...promptIds.map(() => new PyFloat(0)), ...c.actionLogProbs],
    agent_id: c.agentId,
    sequence_ids: [...promptIds, ...c.actionTokens],
  };
  const file = path.join(dir, `log_${c.stamp}_${c.agentId}.txt`);
  fs.writeFileSync(file, pyDumps({ agent_id: c.agentId, result }, { indent: 4 }));
  return file;
}

/** get_coverage_and_passk's CSVs (evaluation): header, then `prompt_id,node_idx,score` rows (csv.writer, \r\n). */
export function writeMartiScores(
  saveDir: string,
  kind: 'public' | 'private',
  rows: readonly [number, number, number][],
): void {
  const text = [`prompt_id,node_idx,${kind}_score`, ...rows.map((r) => r.join(','))].join('\r\n') + '\r\n';
  fs.writeFileSync(path.join(saveDir, `all_${kind}_scores.csv`), text);
}

/** MARTI's code prompt (mcts_utils/code_prompt.py): the problem, and for a refinement the parent's code and feedback. */
export function martiCodePrompt(problem: string, parentCode?: string): string {
  const head = `<|im_start|>user\n${problem}\nWrite a Python solution in a \`\`\`python block.`;
  return (
    (parentCode === undefined
      ? head
      : `${head}\n\nYour previous code:\n\`\`\`python\n${parentCode}\n\`\`\`\nSome tests failed. Fix it.`) +
    '<|im_end|>\n<|im_start|>assistant\n'
  );
}
