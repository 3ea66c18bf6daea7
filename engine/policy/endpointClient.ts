/**
 * One OpenAI-compatible endpoint, through the kept `openai` client: raw-prompt completions (/v1/completions) with
 * per-token log-probs, chat completions (/v1/chat/completions: the `"instructions": "chat"` template), the model list, at most `concurrency` requests in flight (the rest wait: back-pressure on the rollout), the
 * client's retries with exponential backoff on 408/409/429/5xx and lost connections (it honours Retry-After), a
 * timeout per request, and cancellation through an AbortSignal.
 *
 * Every failure becomes one line (EndpointError) that names the endpoint and the fix. The API key is read from the
 * environment variable the source names and goes nowhere but the Authorization header.
 */
import OpenAI from 'openai';
import { z } from 'zod';
import { UserError } from '../base/userError';
import type { EndpointSource } from './policySource';

export class EndpointError extends UserError {}

/** The evaluation was stopped (Ctrl-C, the app's Stop): requests in flight were cancelled. */
export class EndpointStopped extends UserError {}

export interface CompletionAsk {
  prompt: string;
  maxTokens: number;
  temperature: number;
  topP: number;
  stop: string[];
}

/** A chat request: the messages the instruction template built (engine/runs/evaluation/chat/). */
export interface ChatAsk {
  messages: { role: 'system' | 'user' | 'assistant'; content: string }[];
  maxTokens: number;
  temperature: number;
  topP: number;
  stop: string[];
}

export interface CompletionAnswer {
  text: string;
  finish: 'stop' | 'length';
  /** The stop string or token id that ended it, when the server says (vLLM, serve-model). */
  stopReason: string | number | null;
  /** Per-token strings and log-probs, when the server sent them. */
  tokens: string[] | null;
  logProbs: number[] | null;
}

const logprobsSchema = z
  .looseObject({ tokens: z.array(z.string()).nullish(), token_logprobs: z.array(z.number().nullable()).nullish() })
  .nullish();
const choiceSchema = z.looseObject({
  text: z.string(),
  finish_reason: z.string().nullish(),
  stop_reason: z.union([z.string(), z.number()]).nullish(),
  logprobs: logprobsSchema,
});
const completionSchema = z.looseObject({ choices: z.array(choiceSchema).min(1) });
const chunkSchema = z.looseObject({ choices: z.array(choiceSchema.partial({ text: true })) });
const chatChoiceSchema = z.looseObject({
  message: z.looseObject({ content: z.string().nullish() }),
  finish_reason: z.string().nullish(),
  stop_reason: z.union([z.string(), z.number()]).nullish(),
});
const chatSchema = z.looseObject({ choices: z.array(chatChoiceSchema).min(1) });
const chatChunkSchema = z.looseObject({
  choices: z.array(
    z.looseObject({
      delta: z.looseObject({ content: z.string().nullish() }).nullish(),
      finish_reason: z.string().nullish(),
      stop_reason: z.union([z.string(), z.number()]).nullish(),
    }),
  ),
});
const modelListSchema = z.looseObject({
  data: z.array(z.looseObject({ id: z.string(), owned_by: z.string().nullish() })),
});

/** A counting semaphore: at most `limit` holders; the rest wait in order. */
export class Limiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(readonly limit: number) {}
  get inFlight(): number {
    return this.active;
  }
  async run<T>(f: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((r) => this.waiting.push(r));
    this.active++;
    try {
      return await f();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}

/** Printable, one line, bounded: server text quoted in an error. */
function clip(s: string, n = 200): string {
  const one = s.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n)}…` : one;
}

export class EndpointClient {
  private readonly client: OpenAI;
  readonly limiter: Limiter;
  /** Requests sent and answered (for tests and throughput notes). */
  readonly stats = { requests: 0, maxInFlight: 0 };

  constructor(
    readonly source: EndpointSource,
    /** Which system or agent this is, named in errors ("MARS System 2", "agent alpha"). */
    readonly label: string,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    let apiKey = 'EMPTY'; // what local servers without keys expect (vLLM's convention)
    if (source.apiKeyEnv !== undefined) {
      const key = env[source.apiKeyEnv];
      if (!key) {
        throw new EndpointError(
          `${label}: the environment variable ${source.apiKeyEnv} (apiKeyEnv) is not set or empty; export it with the endpoint's API key`,
        );
      }
      apiKey = key;
    }
    this.client = new OpenAI({
      apiKey,
      baseURL: source.baseUrl,
      maxRetries: source.maxRetries,
      timeout: source.timeoutMs,
    });
    this.limiter = new Limiter(source.concurrency);
  }

  private where(): string {
    return `${this.label} (${this.source.model} at ${this.source.baseUrl})`;
  }

  /** One completion; throws EndpointError (or EndpointStopped) with one line. */
  async complete(ask: CompletionAsk, signal?: AbortSignal): Promise<CompletionAnswer> {
    return this.limiter.run(async () => {
      this.stats.maxInFlight = Math.max(this.stats.maxInFlight, this.limiter.inFlight);
      if (signal?.aborted) throw new EndpointStopped(`${this.label}: stopped`);
      try {
        const answer = this.source.stream ? await this.streamed(ask, signal) : await this.whole(ask, signal);
        this.stats.requests++;
        return answer;
      } catch (err) {
        throw this.explain(err, signal);
      }
    });
  }

  /** One chat completion (no log-probs: a chat model's tokens are not the run's); errors as complete()'s. */
  async chat(ask: ChatAsk, signal?: AbortSignal): Promise<CompletionAnswer> {
    return this.limiter.run(async () => {
      this.stats.maxInFlight = Math.max(this.stats.maxInFlight, this.limiter.inFlight);
      if (signal?.aborted) throw new EndpointStopped(`${this.label}: stopped`);
      try {
        const answer = this.source.stream ? await this.chatStreamed(ask, signal) : await this.chatWhole(ask, signal);
        this.stats.requests++;
        return answer;
      } catch (err) {
        throw this.explain(err, signal);
      }
    });
  }

  /**
   * GET /models once, without retries: the served models and who owns them (serve-model says "mars-lab"), or null
   * when the server could not be asked or did not answer with OpenAI's list. A stopped evaluation throws.
   */
  async listModels(signal?: AbortSignal): Promise<{ id: string; ownedBy: string | null }[] | null> {
    try {
      const raw: unknown = await this.client.get('/models', {
        signal,
        maxRetries: 0,
        timeout: Math.min(this.source.timeoutMs, 30_000),
      });
      const parsed = modelListSchema.safeParse(raw);
      return parsed.success ? parsed.data.data.map((m) => ({ id: m.id, ownedBy: m.owned_by ?? null })) : null;
    } catch (err) {
      if (err instanceof OpenAI.APIUserAbortError || signal?.aborted) {
        throw new EndpointStopped(`${this.label}: stopped; requests in flight were cancelled`);
      }
      return null;
    }
  }

  private chatBody(ask: ChatAsk) {
    const s = this.source.sampling;
    return {
      model: this.source.model,
      messages: ask.messages,
      max_tokens: ask.maxTokens,
      temperature: s.temperature ?? ask.temperature,
      top_p: s.topP ?? ask.topP,
      ...(s.seed !== undefined ? { seed: s.seed } : {}),
      ...(ask.stop.length ? { stop: ask.stop } : {}),
    };
  }

  private async chatWhole(ask: ChatAsk, signal?: AbortSignal): Promise<CompletionAnswer> {
    const raw: unknown = await this.client.chat.completions.create(
      { ...this.chatBody(ask), stream: false } as OpenAI.ChatCompletionCreateParamsNonStreaming,
      { signal },
    );
    const parsed = chatSchema.safeParse(raw);
    if (!parsed.success) {
      throw new EndpointError(
        `${this.where()}: the answer is not a chat completion (${typeof raw === 'string' ? 'not JSON' : 'no choices[0].message'}); is baseUrl the server's OpenAI-compatible /v1?`,
      );
    }
    const c = parsed.data.choices[0]!;
    return {
      text: c.message.content ?? '',
      finish: c.finish_reason === 'length' ? 'length' : 'stop',
      stopReason: c.stop_reason ?? null,
      tokens: null,
      logProbs: null,
    };
  }

  private async chatStreamed(ask: ChatAsk, signal?: AbortSignal): Promise<CompletionAnswer> {
    const stream = await this.client.chat.completions.create(
      { ...this.chatBody(ask), stream: true } as OpenAI.ChatCompletionCreateParamsStreaming,
      { signal },
    );
    let text = '';
    let finish: string | null = null;
    let stopReason: string | number | null = null;
    for await (const chunk of stream) {
      const parsed = chatChunkSchema.safeParse(chunk);
      if (!parsed.success) {
        throw new EndpointError(
          `${this.where()}: a streamed chunk is not a chat completion chunk; is baseUrl the server's OpenAI-compatible /v1?`,
        );
      }
      const c = parsed.data.choices[0];
      if (!c) continue;
      text += c.delta?.content ?? '';
      if (c.finish_reason) {
        finish = c.finish_reason;
        stopReason = c.stop_reason ?? null;
      }
    }
    if (finish === null) {
      throw new EndpointError(
        `${this.where()}: the stream ended before the answer finished (no finish_reason); the server stopped mid-answer`,
      );
    }
    return { text, finish: finish === 'length' ? 'length' : 'stop', stopReason, tokens: null, logProbs: null };
  }

  private body(ask: CompletionAsk) {
    const s = this.source.sampling;
    return {
      model: this.source.model,
      prompt: ask.prompt,
      max_tokens: ask.maxTokens,
      temperature: s.temperature ?? ask.temperature,
      top_p: s.topP ?? ask.topP,
      ...(s.seed !== undefined ? { seed: s.seed } : {}),
      ...(ask.stop.length ? { stop: ask.stop } : {}),
      logprobs: 1,
      // vLLM's (and serve-model's) extensions: keep the stop in the text, as the in-process rollouts do, and keep
      // special tokens (MARS's tags). Servers that do not know them ignore them.
      include_stop_str_in_output: true,
      skip_special_tokens: false,
    };
  }

  private async whole(ask: CompletionAsk, signal?: AbortSignal): Promise<CompletionAnswer> {
    const raw: unknown = await this.client.completions.create(
      { ...this.body(ask), stream: false } as OpenAI.CompletionCreateParamsNonStreaming,
      { signal },
    );
    const parsed = completionSchema.safeParse(raw);
    if (!parsed.success) {
      throw new EndpointError(
        `${this.where()}: the answer is not a completion (${typeof raw === 'string' ? 'not JSON' : 'no choices[0].text'}); is baseUrl the server's OpenAI-compatible /v1?`,
      );
    }
    const c = parsed.data.choices[0]!;
    return {
      text: c.text,
      finish: c.finish_reason === 'length' ? 'length' : 'stop',
      stopReason: c.stop_reason ?? null,
      tokens: c.logprobs?.tokens ?? null,
      logProbs: c.logprobs?.token_logprobs ? c.logprobs.token_logprobs.map((x) => x ?? 0) : null,
    };
  }

  private async streamed(ask: CompletionAsk, signal?: AbortSignal): Promise<CompletionAnswer> {
    const stream = await this.client.completions.create(
      { ...this.body(ask), stream: true } as OpenAI.CompletionCreateParamsStreaming,
      { signal },
    );
    let text = '';
    const tokens: string[] = [];
    const logProbs: number[] = [];
    let finish: string | null = null;
    let stopReason: string | number | null = null;
    for await (const chunk of stream) {
      const parsed = chunkSchema.safeParse(chunk);
      if (!parsed.success) {
        throw new EndpointError(
          `${this.where()}: a streamed chunk is not a completion chunk; is baseUrl the server's OpenAI-compatible /v1?`,
        );
      }
      const c = parsed.data.choices[0];
      if (!c) continue;
      text += c.text ?? '';
      tokens.push(...(c.logprobs?.tokens ?? []));
      logProbs.push(...(c.logprobs?.token_logprobs ?? []).map((x) => x ?? 0));
      if (c.finish_reason) {
        finish = c.finish_reason;
        stopReason = c.stop_reason ?? null;
      }
    }
    if (finish === null) {
      throw new EndpointError(
        `${this.where()}: the stream ended before the completion finished (no finish_reason); the server stopped mid-answer`,
      );
    }
    return {
      text,
      finish: finish === 'length' ? 'length' : 'stop',
      stopReason,
      tokens: tokens.length ? tokens : null,
      logProbs: logProbs.length ? logProbs : null,
    };
  }

  private explain(err: unknown, signal?: AbortSignal): Error {
    if (err instanceof EndpointError || err instanceof EndpointStopped) return err;
    const w = this.where();
    if (err instanceof OpenAI.APIUserAbortError || signal?.aborted) {
      return new EndpointStopped(`${this.label}: stopped; requests in flight were cancelled`);
    }
    if (err instanceof OpenAI.APIConnectionTimeoutError) {
      return new EndpointError(
        `${w}: no answer within ${this.source.timeoutMs} ms (${this.source.maxRetries} retries); check the server or raise "timeoutMs"`,
      );
    }
    if (err instanceof OpenAI.APIConnectionError) {
      // fetch's failure ("fetch failed") carries the reason one level down: a code (ECONNREFUSED) or a message ("bad port")
      const cause = err.cause as { code?: string; cause?: { code?: string; message?: string } } | undefined;
      const code =
        cause?.code ?? cause?.cause?.code ?? (cause?.cause?.message ? clip(cause.cause.message, 60) : undefined);
      return new EndpointError(
        `${w}: cannot reach the server${code ? ` (${code})` : ''} after ${this.source.maxRetries} retries; is it running, and is baseUrl right?`,
      );
    }
    if (err instanceof OpenAI.AuthenticationError || err instanceof OpenAI.PermissionDeniedError) {
      const fix = this.source.apiKeyEnv
        ? `set ${this.source.apiKeyEnv} to a key this server accepts`
        : 'add "apiKeyEnv": "NAME" to this policy and export NAME with the key';
      return new EndpointError(
        `${w}: the server refused the API key (${(err as InstanceType<typeof OpenAI.APIError>).status}); ${fix}`,
      );
    }
    if (err instanceof OpenAI.NotFoundError) {
      return new EndpointError(
        `${w}: not found (404): no model "${this.source.model}" there (GET ${this.source.baseUrl.replace(/\/$/, '')}/models lists them), or baseUrl lacks /v1`,
      );
    }
    if (err instanceof OpenAI.RateLimitError) {
      return new EndpointError(
        `${w}: still rate-limited (429) after ${this.source.maxRetries} retries with backoff; lower "concurrency" or raise "maxRetries"`,
      );
    }
    if (err instanceof OpenAI.APIError && err.status !== undefined) {
      return new EndpointError(
        `${w}: the server answered ${err.status}${err.status >= 500 ? ` after ${this.source.maxRetries} retries` : ''}: ${clip(err.message)}`,
      );
    }
    if (err instanceof SyntaxError) {
      return new EndpointError(
        `${w}: the answer is not valid JSON (malformed response); is baseUrl an OpenAI-compatible /v1?`,
      );
    }
    const msg = err instanceof Error ? err.message : String(err);
    if (/terminated|aborted|socket|ECONNRESET|premature/i.test(msg)) {
      return new EndpointError(`${w}: the connection was cut mid-answer (${clip(msg, 80)})`);
    }
    return new EndpointError(`${w}: ${clip(msg)}`);
  }
}
