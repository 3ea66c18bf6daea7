/**
 * The policy-source seam of the rollouts. A rollout asks a PolicyModel for generations — the run's own LlamaModel
 * (engine/model/sampler.ts, as always) or an EndpointPolicy, which sends the same prompt as text to an
 * OpenAI-compatible endpoint and reads the answer back into the run's tokenizer:
 *
 *   "none"  prompt ids ──decode──▶ raw prompt text ──/v1/completions──▶ text ──encode──▶ output ids (+ log-probs)
 *   "chat"  prompt ids ──dialect──▶ system message + chat ──/v1/chat/completions──▶ text ──read──▶ turn ──encode──▶ ids
 *
 * For a mars-lab checkpoint behind `serve-model` the "none" steps are exact (the word tokenizers re-encode their
 * decoded text to the same ids, specials included), so an evaluation through the endpoint is the in-process one. For
 * another model the text is whatever it wrote: when the run's tokens cannot hold it exactly (words the tokenizer
 * lacks), the generation also carries the text itself, which MARTI parses instead of the lossy tokens. A "chat"
 * dialect (engine/runs/evaluation/chat/: the algorithm's instruction template) builds the chat from the prompt's tokens and
 * reads the answer tolerantly (fences and prose stripped, the first well-formed turn taken); what it had to repair is
 * counted and named once in a warning line, and the raw answer stays in the generation (and in the request journal).
 *
 * The stop tokens of a turn are sent as stop strings (their texts) with vLLM's `include_stop_str_in_output`; a server
 * that drops the stop anyway is answered by its `stop_reason`, else by the tag the text left open, else the last stop
 * (EOS). An answer longer than the turn's budget (in the run's tokens) is cut to it, with one warning line.
 */
import type { LlamaModel } from '../model/llama';
import { DecodeSession, generate, type Generation, type SampleOptions } from '../model/sampler';
import type { Tokenizer } from '../model/tokenizers/tokenizer';
import { EndpointClient, type ChatAsk, type CompletionAnswer } from './endpointClient';
import type { RequestJournal } from './journal';
import type { EndpointSource } from './policySource';

/** A generation from an endpoint: the run's tokens, and what they cannot say. */
export interface EndpointGeneration extends Generation {
  /** The answer as the endpoint wrote it (without a dropped stop), when the run's tokens do not hold it exactly. */
  text?: string;
  /** The program a chat dialect read from it (MARTI), null when it found none; absent when not read by a dialect. */
  program?: string | null;
  /** What had to be repaired to read a chat answer, null when it was well-formed. */
  repair?: string | null;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** How a chat dialect read an answer. */
export interface ChatReading {
  /** The turn in the run's text form, its stop included when it ended on one: what is encoded into the run's tokens. */
  text: string;
  /** The program span (MARTI); absent for dialects without one. */
  program?: string | null;
  /** Each repair, named (empty: read as written). */
  repairs: string[];
}

export interface ChatRequest {
  messages: ChatMessage[];
  stop: string[];
  read(answer: string, finish: 'stop' | 'length'): ChatReading;
}

/** An algorithm's instruction template (engine/runs/evaluation/chat/): the chat for a prompt, null for a prompt it does not know. */
export interface ChatDialect {
  /** `final`: the rollout's last turn, in which only an answer counts (MARS System 2). */
  chat(prompt: readonly number[], hints?: { final?: boolean }): ChatRequest | null;
}

/** Chat models write prose and fences around a turn: they get this many tokens beyond the turn's budget to do it in. */
export const CHAT_SLACK_TOKENS = 64;

export interface EndpointPolicyOptions {
  source: EndpointSource;
  /** The run's tokenizer: prompts are its decoded text, answers are read back into it. */
  tokenizer: Tokenizer;
  label: string;
  signal?: AbortSignal;
  journal?: RequestJournal;
  onWarning?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  /** The algorithm's instruction template, for "chat" (and "auto" resolving to it). */
  dialect?: ChatDialect;
}

export class EndpointPolicy {
  readonly client: EndpointClient;
  /** What the evaluations check of a model: the vocabulary is the run's tokenizer's. */
  readonly config: { vocab_size: number; max_position_embeddings: number };
  private warned = false;
  private mode: Promise<'none' | 'chat'> | null = null;
  private readonly repairsWarned = new Set<string>();
  /** Chat answers read, and how many needed each kind of repair. */
  readonly repairs = { answers: 0, repaired: 0, kinds: {} as Record<string, number> };

  constructor(private readonly o: EndpointPolicyOptions) {
    this.client = new EndpointClient(o.source, o.label, o.env);
    this.config = { vocab_size: o.tokenizer.vocabSize, max_position_embeddings: Number.MAX_SAFE_INTEGER };
  }

  get label(): string {
    return this.o.label;
  }

  /** "none" or "chat": the source's, or for "auto" what GET /models says (asked once). */
  instructions(): Promise<'none' | 'chat'> {
    this.mode ??= this.resolve();
    return this.mode;
  }

  private async resolve(): Promise<'none' | 'chat'> {
    const s = this.o.source;
    if (s.instructions !== 'auto') return s.instructions;
    if (!this.o.dialect) return 'none';
    // The listing's verdict is journaled like an answer: a resumed evaluation asks the same way without asking again.
    const j = this.o.journal;
    const key = j?.keyOf({ endpoint: this.identity(), instructions: 'auto' });
    const kept = key ? j!.lookup(key)?.text : undefined;
    if (kept === 'none' || kept === 'chat') return kept;
    const models = await this.client.listModels(this.o.signal);
    // Not asked (unreachable, a refused key, no list): raw prompts, not kept, and no line of its own: a server that
    // fails will fail the first completion too, with the one line that names the fault.
    if (models === null) return 'none';
    const mode = models.find((m) => m.id === s.model)?.ownedBy === 'mars-lab' ? 'none' : 'chat';
    if (key) j!.record(key, { text: mode, finish: 'stop', stopReason: null, tokens: null, logProbs: null });
    return mode;
  }

  private identity() {
    return { baseUrl: this.o.source.baseUrl, model: this.o.source.model, sampling: this.o.source.sampling };
  }

  /** One generation per prompt, asked concurrently (the client's limit holds the rest back). */
  async generate(
    prompts: readonly (readonly number[])[],
    opts: SampleOptions & { rowMaxNewTokens?: readonly number[]; final?: boolean },
  ): Promise<EndpointGeneration[]> {
    const tok = this.o.tokenizer;
    const stops = (opts.stopTokens ?? []).map((id) => tok.tokenOf(id));
    const mode = prompts.length > 0 ? await this.instructions() : 'none';
    return Promise.all(
      prompts.map(async (p, b) => {
        const limit = Math.max(0, Math.min(opts.maxNewTokens, opts.rowMaxNewTokens?.[b] ?? Infinity));
        if (limit === 0) return { tokens: [], logProbs: [], finish: 'length' as const };
        const chat = mode === 'chat' ? this.o.dialect?.chat(p, { final: opts.final }) : null;
        if (chat) return this.chatGeneration(chat, limit, opts);
        const ask = {
          prompt: tok.decode(p),
          maxTokens: limit,
          temperature: opts.temperature ?? 1,
          topP: opts.topP ?? 1,
          stop: [...stops, ...(opts.stopStrings ?? [])],
        };
        const answer = await this.ask(ask);
        return this.read(answer, stops, limit);
      }),
    );
  }

  private async chatGeneration(chat: ChatRequest, limit: number, opts: SampleOptions): Promise<EndpointGeneration> {
    const ask: ChatAsk = {
      messages: chat.messages,
      maxTokens: limit + CHAT_SLACK_TOKENS,
      temperature: opts.temperature ?? 1,
      topP: opts.topP ?? 1,
      stop: chat.stop,
    };
    const answer = await this.journaled({ chat: ask }, () => this.client.chat(ask, this.o.signal));
    const reading = chat.read(answer.text, answer.finish);
    this.noteRepairs(reading.repairs);
    const tok = this.o.tokenizer;
    let tokens = tok.encode(reading.text);
    let finish: Generation['finish'] = 'stop';
    if (tokens.length > limit) {
      this.warnCut(tokens.length, limit);
      tokens = tokens.slice(0, limit);
      finish = 'length';
    }
    const last = tokens.at(-1);
    if (last === undefined || !tok.isSpecial(last)) finish = 'length';
    return {
      tokens,
      logProbs: tokens.map(() => 0),
      finish,
      text: answer.text,
      ...(reading.program !== undefined ? { program: reading.program } : {}),
      repair: reading.repairs.length ? reading.repairs.join('; ') : null,
    };
  }

  private noteRepairs(repairs: readonly string[]): void {
    this.repairs.answers++;
    if (repairs.length) this.repairs.repaired++;
    for (const r of repairs) {
      this.repairs.kinds[r] = (this.repairs.kinds[r] ?? 0) + 1;
      if (this.repairsWarned.has(r)) continue;
      this.repairsWarned.add(r);
      this.o.onWarning?.(
        `${this.o.label}: an answer needed repair (${r}); the raw answers are kept in the request journal (this repair is not reported again)`,
      );
    }
  }

  private warnCut(length: number, limit: number): void {
    if (this.warned) return;
    this.warned = true;
    this.o.onWarning?.(
      `${this.o.label}: an answer of ${length} tokens (in the run's tokenizer) is over the turn's budget of ${limit}: cut to ${limit} (further cuts are not reported)`,
    );
  }

  private ask(ask: Parameters<EndpointClient['complete']>[0]): Promise<CompletionAnswer> {
    return this.journaled({ ask }, () => this.client.complete(ask, this.o.signal));
  }

  /** An answer from the journal when it holds one (keys as before chats existed: `{ endpoint, ask }`), else asked. */
  private async journaled(what: object, asking: () => Promise<CompletionAnswer>): Promise<CompletionAnswer> {
    const j = this.o.journal;
    const key = j?.keyOf({ endpoint: this.identity(), ...what });
    const kept = key ? j!.lookup(key) : undefined;
    if (kept) return kept;
    const answer = await asking();
    if (key) j!.record(key, answer);
    return answer;
  }

  /**
   * The answer in the run's tokens: the stop put back when the server dropped it, cut to the turn's budget; with the
   * text itself when the tokens do not say it exactly.
   */
  private read(a: CompletionAnswer, stops: string[], limit: number): EndpointGeneration {
    const tok = this.o.tokenizer;
    let text = a.text;
    const said = text;
    if (a.finish === 'stop' && stops.length && !stops.some((s) => text.endsWith(s))) {
      const named = typeof a.stopReason === 'string' && stops.includes(a.stopReason) ? a.stopReason : null;
      const open = stops.find((s) => {
        const m = /^<\/(.+)>$/.exec(s);
        return m !== null && text.lastIndexOf(`<${m[1]}>`) > text.lastIndexOf(s);
      });
      text = `${text}${text && !text.endsWith(' ') ? ' ' : ''}${named ?? open ?? stops.at(-1)!}`;
    }
    let tokens = tok.encode(text);
    let logProbs = a.logProbs && a.logProbs.length === tokens.length ? a.logProbs.slice() : tokens.map(() => 0);
    let finish: Generation['finish'] = a.finish;
    if (tokens.length > limit) {
      this.warnCut(tokens.length, limit);
      tokens = tokens.slice(0, limit);
      logProbs = logProbs.slice(0, limit);
      finish = 'length';
    }
    // an answer the server ended on a stop that is not the last token after the cut is a 'length' finish
    if (
      finish === 'stop' &&
      !stops.some((s) => tokens.length > 0 && tok.tokenOf(tokens.at(-1)!) === s) &&
      stops.length
    ) {
      finish = 'length';
    }
    // Lossless reading: words the tokenizer lacks became <unk> (or another spelling): keep what was said, without
    // its stop, for the rollouts that can use text (MARTI parses it). Exact answers (serve-model's) carry nothing.
    if (tok.decode(tok.encode(text)) !== text) {
      const stop = stops.find((s) => said.trimEnd().endsWith(s));
      return { tokens, logProbs, finish, text: stop ? said.trimEnd().slice(0, -stop.length).trimEnd() : said };
    }
    return { tokens, logProbs, finish };
  }

  /** A multi-turn session (MARS's System 2) that resends each row's whole text every turn. */
  session(): EndpointSession {
    return new EndpointSession(this);
  }
}

/** DecodeSession's interface over an endpoint: rows keep their token sequences here; each sample sends them whole. */
export class EndpointSession {
  private seqs: number[][] = [];
  constructor(private readonly policy: EndpointPolicy) {}
  get rows(): number {
    return this.seqs.length;
  }
  tokens(b: number): readonly number[] {
    return this.seqs[b]!;
  }
  async extend(chunks: readonly (readonly number[])[]): Promise<void> {
    if (this.seqs.length === 0) this.seqs = chunks.map((c) => [...c]);
    else chunks.forEach((c, b) => this.seqs[b]!.push(...c));
  }
  keep(rows: readonly number[]): void {
    this.seqs = rows.map((r) => this.seqs[r]!);
  }
  async sample(opts: SampleOptions & { final?: boolean; rowMaxNewTokens?: readonly number[] }): Promise<Generation[]> {
    const gens = await this.policy.generate(this.seqs, opts);
    gens.forEach((g, b) => this.seqs[b]!.push(...g.tokens));
    return gens;
  }
  dispose(): void {}
}

/** What a rollout may be given for a system or a parameter set. */
export type PolicyModel = LlamaModel | EndpointPolicy;

export interface GenerationSession {
  extend(chunks: readonly (readonly number[])[]): Promise<void>;
  keep(rows: readonly number[]): void;
  sample(opts: SampleOptions & { final?: boolean; rowMaxNewTokens?: readonly number[] }): Promise<Generation[]>;
  dispose(): void;
}

export function isEndpointPolicy(m: PolicyModel): m is EndpointPolicy {
  return m instanceof EndpointPolicy;
}

/** sampler.ts generate() for either kind of policy. */
export function generateWith(m: PolicyModel, prompts: number[][], opts: SampleOptions): Promise<Generation[]> {
  return isEndpointPolicy(m) ? m.generate(prompts, opts) : generate(m, prompts, opts);
}

/** A DecodeSession for either kind of policy. */
export function openSession(m: PolicyModel): GenerationSession {
  return isEndpointPolicy(m) ? m.session() : new DecodeSession(m);
}
