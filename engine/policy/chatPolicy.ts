/**
 * A chat policy: something that answers chats with text, for work that speaks to a model in messages rather than in the
 * run's own tokens (MARTI on Python, engine/marti/python/). Two kinds, one interface:
 *
 *   InProcessChatPolicy  a real model loaded here (engine/model/realModel.ts): each chat rendered by the model's own
 *                        template with the generation prompt (raw "user: …" text for a base model without one),
 *                        sampled with the KV cache until its end-of-turn token, in chunks of CHAT_ROWS rows;
 *   EndpointChatPolicy   an OpenAI-compatible server's /v1/chat/completions (llama.cpp's server, vLLM, Ollama,
 *                        `mars-lab serve-model`), the requests sent at once up to the client's concurrency limit.
 *
 * Each chat draws its tokens from its own stream (`rngs`), so a reply does not depend on the chats batched beside it.
 * A served model draws from the server's own generator: its sampled replies repeat only where the server seeds them.
 */
import type { ChatMessage } from '../model/chat/chatTemplate';
import type { RealModel } from '../model/realModel';
import { generate } from '../model/sampler';
import type { Rng } from '../random/prng';
import { EndpointClient } from './endpointClient';
import type { EndpointSource } from './policySource';

export interface ChatReply {
  /** The reply without the token or string it stopped on. */
  text: string;
  /** Tokens the model wrote (the model's own tokenizer's; for an endpoint, what it reported per token, else 0: not counted). */
  tokens: number;
  finish: 'stop' | 'length';
  /**
   * In-process only: the ids the reply was sampled after (the rendered chat), the ids it wrote (the end token it
   * stopped on included) and each one's log-probability under the sampler: what a trainer learns from.
   */
  sample?: { promptIds: number[]; ids: number[]; logProbs: number[] };
}

export interface ChatSampling {
  maxNewTokens: number;
  /** 0 is greedy. */
  temperature: number;
  topP: number;
  /** One stream per chat. */
  rngs: readonly Rng[];
}

export interface ChatPolicy {
  /** What the reports call it: the model file's name, or the endpoint's model id. */
  readonly label: string;
  reply(chats: readonly (readonly ChatMessage[])[], sampling: ChatSampling): Promise<ChatReply[]>;
}

/**
 * Rows sampled at once in-process: the wasm sampler's heap grows with every row (chatgrpo's SAMPLE_ROWS has the
 * measurements); larger batches go in chunks of this many, one after another.
 */
export const CHAT_ROWS = 16;

export class InProcessChatPolicy implements ChatPolicy {
  readonly label: string;

  constructor(
    private readonly real: RealModel,
    label?: string,
  ) {
    this.label = label ?? real.path.split(/[\\/]/).at(-1)!;
  }

  /** The ids a chat is sampled after. */
  promptIds(chat: readonly ChatMessage[]): number[] {
    const { encoder, tokenizer } = this.real;
    if (encoder) return encoder.prompt(chat).ids;
    return tokenizer.encodeForModel(`${chat.map((m) => `${m.role}: ${m.content}`).join('\n')}\nassistant:`);
  }

  async reply(chats: readonly (readonly ChatMessage[])[], s: ChatSampling): Promise<ChatReply[]> {
    const { model, tokenizer, stopTokens } = this.real;
    const out: ChatReply[] = [];
    for (let i = 0; i < chats.length; i += CHAT_ROWS) {
      const chunk = chats.slice(i, i + CHAT_ROWS);
      const prompts = chunk.map((c) => this.promptIds(c));
      const gens = await generate(model, prompts, {
        maxNewTokens: s.maxNewTokens,
        temperature: s.temperature,
        topP: s.topP,
        stopTokens,
        rng: s.rngs[i]!,
        rowRngs: s.rngs.slice(i, i + chunk.length),
      });
      gens.forEach((g, k) => {
        const stopped = g.finish === 'stop';
        const ids = stopped ? g.tokens.slice(0, -1) : g.tokens;
        out.push({
          text: tokenizer.decode(ids, { skipSpecial: true }),
          tokens: g.tokens.length,
          finish: stopped ? 'stop' : 'length',
          sample: { promptIds: prompts[k]!, ids: g.tokens, logProbs: g.logProbs },
        });
      });
    }
    return out;
  }
}

export class EndpointChatPolicy implements ChatPolicy {
  readonly client: EndpointClient;

  constructor(
    private readonly source: EndpointSource,
    readonly label: string,
    private readonly signal?: AbortSignal,
  ) {
    this.client = new EndpointClient(source, label);
  }

  async reply(chats: readonly (readonly ChatMessage[])[], s: ChatSampling): Promise<ChatReply[]> {
    return Promise.all(
      chats.map(async (chat) => {
        const answer = await this.client.chat(
          {
            messages: chat.map((m) => ({ role: m.role as 'system' | 'user' | 'assistant', content: m.content })),
            maxTokens: s.maxNewTokens,
            temperature: s.temperature,
            topP: s.topP,
            stop: [],
          },
          this.signal,
        );
        return { text: answer.text, tokens: answer.tokens?.length ?? 0, finish: answer.finish };
      }),
    );
  }
}
