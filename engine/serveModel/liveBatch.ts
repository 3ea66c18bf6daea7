/**
 * A KV-cached batch that rows can join while it runs: serve-model's continuous batching (batcher.ts). It is the
 * sampler's DecodeSession (engine/model/sampler.ts) reduced to one token per row per step, plus `join`: new prompts
 * are prefilled on their own, then their caches are put under the running rows' (each side left-padded with masked
 * keys to the longer one), so the next step decodes old and new rows together.
 *
 * Every row keeps its own positions (0 at its first real token) and attends only to its own real keys, so what a row
 * computes does not depend on what it is batched with or when it joined (the masked keys add exact zeros): at
 * temperature 0 its tokens are the ones it gets alone. Keys no row can see any more (the padding left by rows that
 * finished) are cut off, so the cache is as long as the longest live row, not the batch's history.
 */
import { cachedForward, DEFAULT_MAX_SCORES } from '../model/sampler';
import type { LayerCache, LlamaModel } from '../model/llama';
import { tf } from '../tensor/backend';

export class LiveBatch {
  private cache: LayerCache[] | null = null;
  /** Per row, per cached key: may it be attended to. */
  private keyRows: number[][] = [];
  /** Per row: real tokens so far (its next position id). */
  private lens: number[] = [];
  /** Next-token logits, [rows, V]. */
  private logits: Float32Array = new Float32Array(0);

  constructor(
    private readonly model: LlamaModel,
    private readonly maxScores = DEFAULT_MAX_SCORES,
  ) {}

  get rows(): number {
    return this.lens.length;
  }

  /** Row `b`'s next-token logits ([V], a view: valid until the next join, step or keep). */
  logitsOf(b: number): Float32Array {
    const V = this.model.config.vocab_size;
    return this.logits.subarray(b * V, (b + 1) * V);
  }

  /** Real tokens in row `b`. */
  length(b: number): number {
    return this.lens[b]!;
  }

  /** One forward over `batch` rows after `past` (engine/model/sampler.ts's cachedForward). */
  private forward(
    ids: Int32Array,
    positions: Int32Array,
    keyMask: Uint8Array,
    batch: number,
    past: LayerCache[] | null,
  ): Promise<{ cache: LayerCache[]; logits: Float32Array }> {
    return cachedForward(this.model, this.maxScores, ids, positions, keyMask, batch, past);
  }

  /** Add rows for `prompts` (each at least one token) after the current ones. */
  async join(prompts: readonly (readonly number[])[]): Promise<void> {
    if (prompts.length === 0) return;
    const n = prompts.length;
    const W = Math.max(...prompts.map((p) => p.length));
    const ids = new Int32Array(n * W);
    const positions = new Int32Array(n * W);
    const mask = new Uint8Array(n * W);
    const keyRows: number[][] = [];
    prompts.forEach((p, b) => {
      if (p.length === 0) throw new Error(`prompt ${b} is empty: every prompt needs at least one token`);
      const pad = W - p.length;
      ids.set(p, b * W + pad);
      for (let i = 0; i < p.length; i++) positions[b * W + pad + i] = i;
      mask.fill(1, b * W + pad, (b + 1) * W);
      keyRows.push(Array.from(mask.subarray(b * W, (b + 1) * W)));
    });
    const fresh = await this.forward(ids, positions, mask, n, null);
    const V = this.model.config.vocab_size;
    if (!this.cache) {
      this.cache = fresh.cache;
      this.keyRows = keyRows;
      this.lens = prompts.map((p) => p.length);
      this.logits = fresh.logits;
      return;
    }
    const T = Math.max(this.keyRows[0]!.length, W);
    const leftPad = (c: tf.Tensor4D, t: number): tf.Tensor4D =>
      t === T
        ? c
        : tf.pad(c, [
            [0, 0],
            [0, 0],
            [T - t, 0],
            [0, 0],
          ]);
    const old = this.cache;
    const tOld = this.keyRows[0]!.length;
    this.cache = old.map((c, l) => {
      const nk = fresh.cache[l]!;
      const merged = tf.tidy(() => ({
        k: tf.concat([leftPad(c.k, tOld), leftPad(nk.k, W)], 0),
        v: tf.concat([leftPad(c.v, tOld), leftPad(nk.v, W)], 0),
      }));
      tf.dispose([c.k, c.v, nk.k, nk.v]);
      return merged;
    });
    const zeros = (k: number): number[] => new Array<number>(k).fill(0);
    this.keyRows = [
      ...this.keyRows.map((r) => [...zeros(T - tOld), ...r]),
      ...keyRows.map((r) => [...zeros(T - W), ...r]),
    ];
    this.lens = [...this.lens, ...prompts.map((p) => p.length)];
    const logits = new Float32Array(this.rows * V);
    logits.set(this.logits, 0);
    logits.set(fresh.logits, (this.rows - n) * V);
    this.logits = logits;
  }

  /** Keep only these rows, in this order; keys no kept row attends to any more are cut off the front. */
  keep(rows: readonly number[]): void {
    if (rows.length === this.rows && rows.every((r, i) => r === i)) return;
    if (rows.length === 0) {
      this.dispose();
      return;
    }
    const V = this.model.config.vocab_size;
    const kept = rows.map((r) => this.keyRows[r]!);
    let cut = 0;
    while (cut < kept[0]!.length - 1 && kept.every((k) => k[cut] === 0)) cut++;
    const idx = tf.tensor1d(Int32Array.from(rows), 'int32');
    const old = this.cache!;
    this.cache = old.map((c) =>
      tf.tidy(() => {
        const k = tf.gather(c.k, idx);
        const v = tf.gather(c.v, idx);
        return cut === 0
          ? { k, v }
          : { k: tf.slice(k, [0, 0, cut, 0], [-1, -1, -1, -1]), v: tf.slice(v, [0, 0, cut, 0], [-1, -1, -1, -1]) };
      }),
    );
    for (const c of old) tf.dispose([c.k, c.v]);
    idx.dispose();
    this.keyRows = kept.map((k) => k.slice(cut));
    this.lens = rows.map((r) => this.lens[r]!);
    const logits = new Float32Array(rows.length * V);
    rows.forEach((r, i) => logits.set(this.logits.subarray(r * V, (r + 1) * V), i * V));
    this.logits = logits;
  }

  /** Feed one token to every row. */
  async step(tokens: readonly number[]): Promise<void> {
    if (tokens.length !== this.rows) throw new Error(`step: ${tokens.length} tokens for ${this.rows} rows`);
    const positions = Int32Array.from(this.lens);
    for (const k of this.keyRows) k.push(1);
    const out = await this.forward(
      Int32Array.from(tokens),
      positions,
      Uint8Array.from(this.keyRows.flat()),
      this.rows,
      this.cache,
    );
    for (const c of this.cache ?? []) tf.dispose([c.k, c.v]);
    this.cache = out.cache;
    this.logits = out.logits;
    this.lens = this.lens.map((l) => l + 1);
  }

  dispose(): void {
    for (const c of this.cache ?? []) tf.dispose([c.k, c.v]);
    this.cache = null;
    this.keyRows = [];
    this.lens = [];
    this.logits = new Float32Array(0);
  }
}
