/**
 * The generation queue of `serve-model`: requests that arrive while the model is busy wait, and every wave takes the
 * waiting requests that share sampling settings (temperature, top-p) into one batch of the engine's KV-cache sampler
 * (engine/model/sampler.ts DecodeSession), one token per row per step. Rows stop on their own (a stop token, a stop
 * string, their own max_tokens, the context) and leave the batch; each drawn token is handed to its request at once,
 * which is what streaming sends.
 *
 * At temperature 0 a row's tokens do not depend on what it is batched with (the sampler masks other rows' padding), so
 * a request gives the same text alone, in a batch, or in-process.
 */
import type { LlamaModel } from '../model/llama';
import { DecodeSession, type FinishReason } from '../model/sampler';
import { Rng } from '../random/prng';

export interface GenerationRequest {
  prompt: number[];
  maxTokens: number;
  temperature: number;
  topP: number;
  /** Token ids that end the row (the token is part of the output, as in-process). */
  stopIds: readonly number[];
  /** Texts that end the row when its decoded output ends with one. */
  stopStrings: readonly string[];
  /** Called with each token as it is drawn. */
  onToken?: (id: number, logProb: number) => void;
  signal?: AbortSignal;
}

export interface GenerationResult {
  tokens: number[];
  logProbs: number[];
  finish: FinishReason;
  /** The stop id or stop string that ended the row, when one did. */
  stopReason: number | string | null;
}

interface Pending {
  req: GenerationRequest;
  resolve: (r: GenerationResult) => void;
  reject: (e: unknown) => void;
}

export class GenerationQueue {
  private readonly waiting: Pending[] = [];
  private running = false;
  private readonly rng: Rng;
  /** Waves run so far and rows they held (for tests and the throughput note). */
  readonly stats = { waves: 0, rows: 0, maxRows: 0 };

  constructor(
    private readonly model: LlamaModel,
    private readonly decode: (ids: number[]) => string,
    private readonly maxBatch = 64,
    seed = 0,
  ) {
    this.rng = new Rng(seed);
  }

  submit(req: GenerationRequest): Promise<GenerationResult> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ req, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.waiting.length > 0) {
        // Let requests that arrive in the same tick join this wave.
        await new Promise((r) => setImmediate(r));
        const first = this.waiting[0]!.req;
        const wave: Pending[] = [];
        for (let i = 0; i < this.waiting.length && wave.length < this.maxBatch;) {
          const p = this.waiting[i]!;
          if (p.req.temperature === first.temperature && p.req.topP === first.topP) {
            wave.push(p);
            this.waiting.splice(i, 1);
          } else i++;
        }
        await this.runWave(wave);
      }
    } finally {
      this.running = false;
    }
  }

  private async runWave(wave: Pending[]): Promise<void> {
    this.stats.waves++;
    this.stats.rows += wave.length;
    this.stats.maxRows = Math.max(this.stats.maxRows, wave.length);
    const maxCtx = this.model.config.max_position_embeddings;
    const out: GenerationResult[] = wave.map(() => ({ tokens: [], logProbs: [], finish: 'length', stopReason: null }));
    // Rows with nothing to do (max_tokens 0, aborted, or a prompt that fills the context) finish before the batch.
    let live: number[] = [];
    wave.forEach((p, i) => {
      if (p.req.signal?.aborted || p.req.maxTokens <= 0) return;
      if (p.req.prompt.length >= maxCtx - 1) out[i]!.finish = 'context';
      else live.push(i);
    });
    const session = new DecodeSession(this.model);
    try {
      if (live.length > 0) await session.extend(live.map((i) => wave[i]!.req.prompt));
      const { temperature, topP } = wave[0]!.req;
      while (live.length > 0) {
        // The CPU backends compute without giving the event loop a turn: yield once per step, so requests that arrive
        // meanwhile are read (they join the next wave) and streamed tokens reach their sockets.
        await new Promise((r) => setImmediate(r));
        const gens = await session.sample({ maxNewTokens: 1, temperature, topP, rng: this.rng, final: false });
        const still: number[] = [];
        live.forEach((i, row) => {
          const g = gens[row]!;
          const r = out[i]!;
          const req = wave[i]!.req;
          const id = g.tokens[0]!;
          r.tokens.push(id);
          r.logProbs.push(g.logProbs[0]!);
          req.onToken?.(id, g.logProbs[0]!);
          let done = true;
          if (req.stopIds.includes(id)) {
            r.finish = 'stop';
            r.stopReason = id;
          } else if (req.stopStrings.length && this.endsWithStop(r.tokens, req.stopStrings, r)) r.finish = 'stop';
          else if (g.finish === 'context') r.finish = 'context';
          else if (r.tokens.length >= req.maxTokens) r.finish = 'length';
          else if (req.signal?.aborted) r.finish = 'length';
          else done = false;
          if (!done) still.push(row);
        });
        live = still.map((row) => live[row]!);
        if (live.length > 0) session.keep(still);
      }
      wave.forEach((p, i) => p.resolve(out[i]!));
    } catch (err) {
      wave.forEach((p) => p.reject(err));
    } finally {
      session.dispose();
    }
  }

  private endsWithStop(tokens: number[], stops: readonly string[], r: GenerationResult): boolean {
    const tail = this.decode(tokens.slice(-32));
    const hit = stops.find((s) => tail.endsWith(s));
    if (hit === undefined) return false;
    r.stopReason = hit;
    return true;
  }
}
