/**
 * The policy-source seam of the rollouts. A rollout asks a PolicyModel for generations — the run's own LlamaModel
 * (engine/model/sampler.ts, as always) or an EndpointPolicy, which sends the same prompt as text to an
 * OpenAI-compatible endpoint and reads the answer back into the run's tokenizer:
 *
 *   prompt ids ──decode──▶ raw prompt text ──/v1/completions──▶ text ──encode──▶ output ids (+ log-probs)
 *
 * For a mars-lab checkpoint behind `serve-model` both steps are exact (the word tokenizers re-encode their decoded
 * text to the same ids, specials included), so an evaluation through the endpoint is the in-process one. For another
 * model the text is whatever it wrote, read in the run's tokenizer (words it lacks become <unk>).
 *
 * The stop tokens of a turn are sent as stop strings (their texts) with vLLM's `include_stop_str_in_output`; a server
 * that drops the stop anyway is answered by its `stop_reason`, else by the tag the text left open, else the last stop
 * (EOS). An answer longer than the turn's budget (in the run's tokens) is cut to it, with one warning line.
 */
import type { LlamaModel } from '../model/llama';
import { DecodeSession, generate, type Generation, type SampleOptions } from '../model/sampler';
import type { Tokenizer } from '../model/tokenizer';
import { EndpointClient, type CompletionAnswer } from './endpointClient';
import type { RequestJournal } from './journal';
import type { EndpointSource } from './policySource';

export interface EndpointPolicyOptions {
  source: EndpointSource;
  /** The run's tokenizer: prompts are its decoded text, answers are read back into it. */
  tokenizer: Tokenizer;
  label: string;
  signal?: AbortSignal;
  journal?: RequestJournal;
  onWarning?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
}

export class EndpointPolicy {
  readonly client: EndpointClient;
  /** What the evaluations check of a model: the vocabulary is the run's tokenizer's. */
  readonly config: { vocab_size: number; max_position_embeddings: number };
  private warned = false;

  constructor(private readonly o: EndpointPolicyOptions) {
    this.client = new EndpointClient(o.source, o.label, o.env);
    this.config = { vocab_size: o.tokenizer.vocabSize, max_position_embeddings: Number.MAX_SAFE_INTEGER };
  }

  get label(): string {
    return this.o.label;
  }

  /** One generation per prompt, asked concurrently (the client's limit holds the rest back). */
  async generate(
    prompts: readonly (readonly number[])[],
    opts: SampleOptions & { rowMaxNewTokens?: readonly number[] },
  ): Promise<Generation[]> {
    const tok = this.o.tokenizer;
    const stops = (opts.stopTokens ?? []).map((id) => tok.tokenOf(id));
    return Promise.all(
      prompts.map(async (p, b) => {
        const limit = Math.max(0, Math.min(opts.maxNewTokens, opts.rowMaxNewTokens?.[b] ?? Infinity));
        if (limit === 0) return { tokens: [], logProbs: [], finish: 'length' as const };
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

  private async ask(ask: Parameters<EndpointClient['complete']>[0]): Promise<CompletionAnswer> {
    const j = this.o.journal;
    const key = j?.keyOf({
      endpoint: { baseUrl: this.o.source.baseUrl, model: this.o.source.model, sampling: this.o.source.sampling },
      ask,
    });
    const kept = key ? j!.lookup(key) : undefined;
    if (kept) return kept;
    const answer = await this.client.complete(ask, this.o.signal);
    if (key) j!.record(key, answer);
    return answer;
  }

  /** The answer in the run's tokens: the stop put back when the server dropped it, cut to the turn's budget. */
  private read(a: CompletionAnswer, stops: string[], limit: number): Generation {
    const tok = this.o.tokenizer;
    let text = a.text;
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
      if (!this.warned) {
        this.warned = true;
        this.o.onWarning?.(
          `${this.o.label}: an answer of ${tokens.length} tokens (in the run's tokenizer) is over the turn's budget of ${limit}: cut to ${limit} (further cuts are not reported)`,
        );
      }
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
