/**
 * A model's reply split for drawing (issue 33, item 5): its special tokens (chat-template markers such as
 * `<|im_end|>`, `<|eot_id|>`, `<s>`, `</s>`, `<end_of_turn>`, `[INST]`), its fenced code blocks (```python … ```, one
 * the reply opened and never closed runs to the end, as pythonPrompts.ts reads it) and the prose around them.
 *
 * Special tokens are hidden by default: with `showSpecial` false they are taken out of the text before the fences are
 * found (so a marker inside a block does not end it) and only counted; with it true each is its own part, between
 * the blocks and prose of the text around it. What is a special token is read from the text's form alone: the
 * records keep text, not token ids.
 */

export type ReplyPart =
  | { kind: 'text'; text: string }
  | { kind: 'special'; text: string }
  | {
      kind: 'code';
      lang: string;
      code: string;
      python: boolean;
      /** The fence as written (```python), and whether the reply closed it. */
      fence: string;
      closed: boolean;
    };

/**
 * Chat-template markers as they appear in decoded text: ChatML's and Llama 3's `<|…|>`, Llama 2's `<s>` `</s>` and
 * `[INST]`, Gemma's turn markers. Not the toy tasks' own symbols (`<bos>`, `<eos>`, `<pad>`, `<unk>`, `<sep>`): in a
 * seqgrpo run those are what the policy wrote, and hiding them would hide its mistakes.
 */
export const SPECIAL_TOKEN = /<\|[A-Za-z0-9_.:\- ]{1,48}\|>|<\/?s>|<\/?(?:start_of_turn|end_of_turn)>|\[\/?INST\]/g;

const PYTHON = new Set(['python', 'py', 'python3']);
const FENCE = /(```([A-Za-z0-9_+-]*)[^\n]*)\n([\s\S]*?)(```|$)/g;

function fenced(text: string): ReplyPart[] {
  const parts: ReplyPart[] = [];
  let at = 0;
  for (const m of text.matchAll(FENCE)) {
    if (m.index > at) parts.push({ kind: 'text', text: text.slice(at, m.index) });
    const lang = (m[2] ?? '').toLowerCase();
    parts.push({
      kind: 'code',
      lang,
      code: (m[3] ?? '').replace(/\n$/, ''),
      python: PYTHON.has(lang),
      fence: m[1]!,
      closed: m[4] === '```',
    });
    at = m.index + m[0].length;
  }
  if (at < text.length) parts.push({ kind: 'text', text: text.slice(at) });
  return parts;
}

/**
 * The text of a recorded reply to draw: a chatgrpo reply's `raw` text (special tokens as the model wrote them, the end
 * token it stopped on included) when they are shown and the record has it, else its `output` (decoded without them
 * in chatgrpo's records; as the policy wrote it in seqgrpo's, whose toy symbols are never hidden).
 */
export function replyShown(reply: { output: string; raw?: string }, showSpecial: boolean): string {
  return showSpecial && reply.raw !== undefined ? reply.raw : reply.output;
}

/** How many special tokens `text` holds. */
export function specialCount(text: string): number {
  return [...text.matchAll(SPECIAL_TOKEN)].length;
}

export function replyParts(text: string, showSpecial: boolean): ReplyPart[] {
  if (!showSpecial) return fenced(text.replace(SPECIAL_TOKEN, ''));
  const parts: ReplyPart[] = [];
  let at = 0;
  for (const m of text.matchAll(SPECIAL_TOKEN)) {
    parts.push(...fenced(text.slice(at, m.index)));
    parts.push({ kind: 'special', text: m[0] });
    at = m.index + m[0].length;
  }
  parts.push(...fenced(text.slice(at)));
  return parts;
}
