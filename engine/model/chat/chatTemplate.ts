/**
 * A real model's own chat template (issue 30, item 5), rendered by the kept library @huggingface/jinja as transformers'
 * `apply_chat_template` renders it with Python's jinja2: trim_blocks and lstrip_blocks on, the messages, the generation
 * prompt switch, the special tokens' texts (bos_token, eos_token, …) and the globals `raise_exception` and
 * `strftime_now`. Checked against transformers on the real SmolLM2 template and on Llama 3.2's and Qwen3's
 * (tests/unit/model/chatTemplatePeers.test.ts).
 *
 * Where the library renders differently from jinja2, jinjaFixes.ts corrects it. Two differences from transformers are
 * deliberate:
 *   - `strftime_now` reads a clock fixed when the template is made (`now`), not the wall clock: a run renders the same
 *     prompt at step 0 and after a resume a day later (Llama 3's template puts "Today Date" in every system message);
 *   - a rendered text is bounded (MAX_RENDERED_CHARS) and so is `range` (MAX_RANGE items): the template is vetted
 *     once at load in a worker with bounded time and memory (templateProbe.ts), and a render after that which would
 *     grow past a bound is refused instead of passed on.
 * The globals are set here rather than by the library's Template.render (which declares them itself and cannot have
 * one replaced); they are the library's own set (true/false/none in both spellings, raise_exception, range,
 * strftime_now), with the two changes above.
 *
 * A template is a program from the model's files: its errors are one line naming where it came from, never its text.
 */
import { Environment, Interpreter, Template } from '@huggingface/jinja';
import { z } from 'zod';
import { UserError } from '../../base/userError';
import { applyJinjaFixes } from './jinjaFixes';

applyJinjaFixes();

/** One turn of a conversation, as chat templates take it. */
export const chatMessageSchema = z.object({ role: z.string().min(1).max(64), content: z.string() });
export type ChatMessage = z.infer<typeof chatMessageSchema>;

/** The role names templates are asked about (model info, the probe). */
export const PROBED_ROLES = ['system', 'user', 'assistant', 'tool'] as const;

/** Real templates are under 20 kB (Qwen3's 4 kB, Llama 3.2's 4 kB); one past this is not a chat template. */
export const MAX_TEMPLATE_CHARS = 1 << 20;
/** A rendered conversation past 8 M characters (≈ 2 M tokens, far beyond any model's context) is refused. */
export const MAX_RENDERED_CHARS = 8 << 20;

/** `range` past a million items is refused: no chat template loops that far over a conversation. */
export const MAX_RANGE = 1_000_000;

export class ChatTemplateError extends UserError {}

/** Python's range(), bounded. */
function boundedRange(start: number, stop?: number, step = 1): number[] {
  if (stop === undefined) [start, stop] = [0, start];
  if (step === 0) throw new Error('range() step must not be zero');
  const count = Math.max(0, Math.ceil((stop - start) / step));
  if (count > MAX_RANGE) throw new Error(`range() of ${count} items is more than the ${MAX_RANGE} allowed`);
  return Array.from({ length: count }, (_, i) => start + i * step);
}

/** The special tokens' texts a template may name (transformers passes its special_tokens_map). */
export interface TemplateTokens {
  bos_token?: string | null;
  eos_token?: string | null;
  unk_token?: string | null;
  pad_token?: string | null;
}

export interface RenderOptions {
  /** Append the text that opens the assistant's turn (what a model is sampled after). */
  addGenerationPrompt: boolean;
  /** Further template variables (e.g. Qwen3's enable_thinking). */
  extra?: Readonly<Record<string, unknown>>;
}

function firstLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  const line = text.split('\n')[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/** strftime's common fields, as Python formats them (the templates of the field use %d %b %Y and %Y-%m-%d). */
export function strftime(date: Date, format: string): string {
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const long = [
    'January',
    'February',
    'March',
    'April',
    'May',
    'June',
    'July',
    'August',
    'September',
    'October',
    'November',
    'December',
  ];
  const pad = (n: number) => String(n).padStart(2, '0');
  const fields: Record<string, string> = {
    d: pad(date.getUTCDate()),
    m: pad(date.getUTCMonth() + 1),
    Y: String(date.getUTCFullYear()),
    y: pad(date.getUTCFullYear() % 100),
    b: months[date.getUTCMonth()]!,
    B: long[date.getUTCMonth()]!,
    H: pad(date.getUTCHours()),
    M: pad(date.getUTCMinutes()),
    S: pad(date.getUTCSeconds()),
    '%': '%',
  };
  return format.replace(/%([a-zA-Z%])/g, (whole, f: string) => fields[f] ?? whole);
}

export class ChatTemplate {
  private readonly program: Template;
  private readonly strftimeNow: (format: unknown) => string;

  /**
   * @param source the template's text (tokenizer_config.json's chat_template, or GGUF's tokenizer.chat_template)
   * @param origin where it came from, for errors ("…/tokenizer_config.json chat_template")
   */
  constructor(
    readonly source: string,
    readonly tokens: TemplateTokens,
    readonly origin: string,
    readonly now: Date = new Date(),
  ) {
    if (source.length > MAX_TEMPLATE_CHARS) {
      throw new ChatTemplateError(
        `${origin}: the chat template is ${source.length} characters, more than the ${MAX_TEMPLATE_CHARS} one may be`,
      );
    }
    try {
      this.program = new Template(source);
    } catch (err) {
      throw new ChatTemplateError(`${origin}: the chat template does not parse (${firstLine(err)})`);
    }
    this.strftimeNow = (format) => strftime(now, String(format));
  }

  /** The conversation as the model reads it. */
  render(messages: readonly ChatMessage[], opts: RenderOptions): string {
    const variables: Record<string, unknown> = {
      false: false,
      true: true,
      none: null,
      False: false,
      True: true,
      None: null,
      raise_exception: (message: unknown) => {
        throw new Error(String(message));
      },
      range: boundedRange,
      strftime_now: this.strftimeNow,
      bos_token: this.tokens.bos_token ?? '',
      eos_token: this.tokens.eos_token ?? '',
      unk_token: this.tokens.unk_token ?? '',
      pad_token: this.tokens.pad_token ?? '',
      ...opts.extra,
      messages: messages.map((m) => ({ ...m })),
      add_generation_prompt: opts.addGenerationPrompt,
    };
    let text: unknown;
    try {
      const env = new Environment();
      for (const [name, value] of Object.entries(variables)) env.set(name, value);
      text = new Interpreter(env).run(this.program.parsed).value;
    } catch (err) {
      throw new ChatTemplateError(`${this.origin}: the chat template failed on this conversation (${firstLine(err)})`);
    }
    if (typeof text !== 'string') throw new ChatTemplateError(`${this.origin}: the chat template rendered no text`);
    if (text.length > MAX_RENDERED_CHARS) {
      throw new ChatTemplateError(
        `${this.origin}: the chat template rendered ${text.length} characters for ${messages.length} messages ` +
          `(at most ${MAX_RENDERED_CHARS})`,
      );
    }
    return text;
  }
}
