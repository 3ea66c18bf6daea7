/**
 * A conversation as token ids for sampling and training through a chat template (issue 30, item 5), with the loss
 * mask computed here: @huggingface/jinja drops `{% generation %}` markers, and most templates (SmolLM2's, Llama 3's,
 * Qwen's) have none, so the assistant's tokens are found by rendering.
 *
 *   prompt(messages)        the ids a turn is sampled after: the template with its generation prompt;
 *   conversation(messages)  the ids of the whole conversation and a mask that is 1 on each assistant turn's text and
 *                           on the end-of-turn token the template writes right after it (the token a policy must learn
 *                           to stop with), 0 on everything the template or the other roles wrote.
 *
 * How an assistant turn is found: for the i-th message (an assistant's), A = render(messages[..i], generation prompt)
 * is what the model was prompted with and B = render(messages[..i+1]) the conversation with its answer; the turn's
 * text begins where A ends and ends where its content ends inside B. That needs the template to be prefix-consistent
 * on this conversation (each rendering begins with the one before it). Qwen3's template is not when an earlier
 * assistant turn held <think>…</think> (it drops reasoning of turns before the last question): conversation() then
 * refuses in one line, and such a conversation is trained turn by turn (each turn its own prompt and completion).
 *
 * Ids are the pieces' ids concatenated (each piece encoded alone, as a rollout's ids are its prompt's then its
 * sampled tokens); tests compare them with transformers' apply_chat_template(tokenize=True) on the real templates.
 */
import type { Tokenizer } from '../tokenizers/tokenizer';
import { ChatTemplateError, type ChatMessage, type ChatTemplate } from './chatTemplate';

export interface EncodedConversation {
  ids: number[];
  /** 1 where the token is the assistant's (trained on), 0 elsewhere; as long as ids. */
  mask: number[];
  /** The rendered text ids encode (without generation prompt). */
  text: string;
}

export class ChatEncoder {
  constructor(
    readonly template: ChatTemplate,
    readonly tokenizer: Tokenizer,
  ) {}

  /** The text and ids a new assistant turn is sampled after. */
  prompt(messages: readonly ChatMessage[], extra?: Readonly<Record<string, unknown>>): { text: string; ids: number[] } {
    const text = this.template.render(messages, { addGenerationPrompt: true, extra });
    return { text, ids: this.tokenizer.encode(text) };
  }

  /** The special token's text the template writes right after an assistant turn (ChatML's <|im_end|>), or ''. */
  endOfTurnText(): string {
    const probe = 'end-of-turn probe';
    const text = this.template.render(
      [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: probe },
      ],
      { addGenerationPrompt: false },
    );
    const at = text.lastIndexOf(probe);
    return at < 0 ? '' : this.endOfTurn(text.slice(at + probe.length));
  }

  /** The special token that ends an assistant turn, when the template writes one right after the turn's text. */
  private endOfTurn(after: string): string {
    for (let end = Math.min(after.length, 32); end > 0; end--) {
      const piece = after.slice(0, end);
      const ids = this.tokenizer.encode(piece);
      if (ids.length === 1 && this.tokenizer.isSpecial(ids[0]!)) return piece;
    }
    return '';
  }

  /** The character spans [start, end) of each assistant turn in the rendered conversation. */
  assistantSpans(
    messages: readonly ChatMessage[],
    extra?: Readonly<Record<string, unknown>>,
  ): {
    text: string;
    spans: Array<[number, number]>;
  } {
    const text = this.template.render(messages, { addGenerationPrompt: false, extra });
    const spans: Array<[number, number]> = [];
    const inconsistent = (i: number) =>
      new ChatTemplateError(
        `${this.template.origin}: the chat template is not prefix-consistent on this conversation (message ${i}); ` +
          'train its assistant turns one at a time (each with its own prompt)',
      );
    messages.forEach((m, i) => {
      if (m.role !== 'assistant') return;
      const before = this.template.render(messages.slice(0, i), { addGenerationPrompt: true, extra });
      const upTo = this.template.render(messages.slice(0, i + 1), { addGenerationPrompt: false, extra });
      if (!upTo.startsWith(before) || !text.startsWith(upTo) || before.length < (spans.at(-1)?.[1] ?? 0)) {
        throw inconsistent(i);
      }
      // The turn ends where its content does; a template may trim the content (Llama 3) or put text before it
      // (Qwen3's empty <think> block), so the content is looked for as it is, then trimmed.
      let end = -1;
      for (const content of [m.content, m.content.trim()]) {
        const at = content.length === 0 ? upTo.length : upTo.lastIndexOf(content);
        if (content.length > 0 && at >= before.length) {
          end = at + content.length;
          break;
        }
      }
      if (end < 0 && m.content.trim().length === 0) end = before.length;
      if (end < 0) throw inconsistent(i);
      spans.push([before.length, end + this.endOfTurn(upTo.slice(end)).length]);
    });
    return { text, spans };
  }

  /** The whole conversation's ids and its assistant mask. */
  conversation(messages: readonly ChatMessage[], extra?: Readonly<Record<string, unknown>>): EncodedConversation {
    const { text, spans } = this.assistantSpans(messages, extra);
    const ids: number[] = [];
    const mask: number[] = [];
    const add = (piece: string, value: number) => {
      if (piece.length === 0) return;
      for (const id of this.tokenizer.encode(piece)) {
        ids.push(id);
        mask.push(value);
      }
    };
    let at = 0;
    for (const [start, end] of spans) {
      add(text.slice(at, start), 0);
      add(text.slice(start, end), 1);
      at = end;
    }
    add(text.slice(at), 0);
    return { ids, mask, text };
  }
}
