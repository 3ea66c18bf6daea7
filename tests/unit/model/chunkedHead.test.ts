/**
 * The vocabulary head in row chunks (model/chunkedHead.ts, issue 30 item 7): with chunking forced at 3 rows, tokenLogProbs'
 * log-probs, entropies and the gradients of a loss mixing both w.r.t. every variable equal the unchunked head's, for
 * tied and untied heads, a temperature ≠ 1, with and without `only`, under LoRA (a frozen head), on cpu and on wasm with
 * the native kernels as this process has them (the fused log-softmax where the addon is built), with the fused ops off (MARS_LAB_NATIVE_FUSED=0) and with the native kernels off
 * (MARS_LAB_NATIVE=0). And the point of it: the peak of tensor memory during one gradient at a vocabulary of 8,192 is a
 * fraction of the unchunked head's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { headChunkRows } from '../../../engine/model/headChunks';
import { rightPaddedLayout, type LlamaModel } from '../../../engine/model/llama';
import { padBatch, tokenLogProbs, type LogProbOptions } from '../../../engine/model/logProbs';
import { LoraAdapters } from '../../../engine/model/lora/loraAdapters';
import { Rng } from '../../../engine/random/prng';
import { tf } from '../../../engine/tensor/backend';
import { fusedInactiveReason, fusedKernelCount } from '../../../engine/tensor/native/fused';
import { configureNativeKernels } from '../../../engine/tensor/native/status';
import { useBackend } from '../../helpers/backends';
import { fixedSamples } from '../../helpers/fixedSamples';
import { tinyModel } from '../../helpers/tinyModel';

interface Setup {
  name: string;
  backend: 'cpu' | 'wasm';
  env: Record<string, string>;
}

const SETUPS: Setup[] = [
  { name: 'cpu', backend: 'cpu', env: {} },
  { name: 'wasm, native kernels as this process has them', backend: 'wasm', env: {} },
  { name: 'wasm, MARS_LAB_NATIVE_FUSED=0', backend: 'wasm', env: { MARS_LAB_NATIVE_FUSED: '0' } },
  { name: 'wasm, MARS_LAB_NATIVE=0', backend: 'wasm', env: { MARS_LAB_NATIVE: '0' } },
];

const ENV_NAMES = ['MARS_LAB_NATIVE', 'MARS_LAB_NATIVE_FUSED'] as const;
const savedEnv = Object.fromEntries(ENV_NAMES.map((n) => [n, process.env[n]]));

function restoreEnv(): void {
  for (const n of ENV_NAMES) {
    if (savedEnv[n] === undefined) delete process.env[n];
    else process.env[n] = savedEnv[n];
  }
}

/** Per-token log-probs, entropies, and the gradients of Σ mask·(a·ℓ + b·H) w.r.t. every trained variable. */
async function evaluate(model: LlamaModel, opts: LogProbOptions) {
  const samples = fixedSamples(model.config.vocab_size, 7, 5);
  const batch = padBatch(samples.map((s) => s.tokens));
  const shape: [number, number] = [samples.length, batch.width];
  const a = tf.randomNormal(shape, 0, 1, 'float32', 11);
  const b = tf.randomNormal(shape, 0, 1, 'float32', 12);
  const vars = model.variables();
  const { value, grads } = tf.variableGrads(() => {
    const { logp, entropy } = tokenLogProbs(model, batch, { ...opts, entropy: true });
    return tf.sum<tf.Scalar>(tf.add(tf.mul(logp, a), tf.mul(entropy!, b)));
  }, vars);
  const r = tf.tidy(() => tokenLogProbs(model, batch, { ...opts, entropy: true }));
  const out = {
    loss: (await value.data())[0]!,
    logp: (await r.logp.data()) as Float32Array,
    entropy: (await r.entropy!.data()) as Float32Array,
    grads: await Promise.all(vars.map(async (v) => (await grads[v.name]!.data()) as Float32Array)),
    // logp alone (no entropy output): the chunked op's other form.
    logpOnly: await (async () => {
      const t = tf.tidy(() => tokenLogProbs(model, batch, opts).logp);
      const d = (await t.data()) as Float32Array;
      t.dispose();
      return d;
    })(),
    logpOnlyGrads: await (async () => {
      const g = tf.variableGrads(() => tf.sum<tf.Scalar>(tf.mul(tokenLogProbs(model, batch, opts).logp, a)), vars);
      const d = await Promise.all(vars.map(async (v) => (await g.grads[v.name]!.data()) as Float32Array));
      tf.dispose([g.value, ...Object.values(g.grads)]);
      return d;
    })(),
    mask: samples.flatMap((s) => [...s.lossMask, ...Array<number>(batch.width - s.tokens.length).fill(0)]),
  };
  tf.dispose([a, b, value, r.logp, r.entropy!, ...Object.values(grads)]);
  return out;
}

/** Largest |x − y| over two arrays, and the largest |y| (the scale). */
function worst(x: ArrayLike<number>, y: ArrayLike<number>): { diff: number; scale: number } {
  expect(x.length).toBe(y.length);
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < x.length; i++) {
    const d = Math.abs(x[i]! - y[i]!);
    if (!(d <= diff)) diff = d; // NaN sticks
    scale = Math.max(scale, Math.abs(y[i]!));
  }
  return { diff, scale };
}

function expectClose(x: ArrayLike<number>, y: ArrayLike<number>, what: string, tol = 2e-5): void {
  const { diff, scale } = worst(x, y);
  expect(diff, `${what}: worst difference ${diff} at scale ${scale}`).toBeLessThanOrEqual(tol * Math.max(1, scale));
}

describe('headChunkRows', () => {
  it('chunks only past 2^24 floats of logits by default, and as told when told', () => {
    expect(headChunkRows(4096, 4096)).toBe(4096); // 2^24 exactly: one chunk
    expect(headChunkRows(4097, 4096)).toBe(1024); // ⌊2^22 / 4096⌋
    expect(headChunkRows(16 * 256, 49152)).toBe(85);
    expect(headChunkRows(16 * 256, 151936)).toBe(27);
    expect(headChunkRows(10, 40, 3)).toBe(3);
    expect(headChunkRows(2, 40, 3)).toBe(2);
    expect(headChunkRows(10, 40, Infinity)).toBe(10);
    expect(() => headChunkRows(10, 40, 0)).toThrow(/at least 1/);
  });
});

describe.each(SETUPS)('the chunked head on $name', (setup) => {
  /** Whether the fused log-softmax runs in this setup (then its kernel count must rise). */
  let fused = false;
  beforeAll(async () => {
    Object.assign(process.env, setup.env);
    await useBackend(setup.backend);
    configureNativeKernels(setup.backend);
    fused = fusedInactiveReason() === '';
    if (setup.backend === 'cpu' || Object.keys(setup.env).length > 0) expect(fused).toBe(false);
    // Where CI insists on the native kernels and nothing switches them off, the fused path is the one tested.
    else if (process.env.MARS_LAB_EXPECT_NATIVE && process.env.MARS_LAB_NATIVE !== '0') expect(fused).toBe(true);
  });
  afterAll(() => {
    restoreEnv();
    configureNativeKernels(setup.backend);
  });

  it.each([
    { tied: false, only: false },
    { tied: false, only: true },
    { tied: true, only: false },
    { tied: true, only: true },
  ])('equals the unchunked head: tied $tied, only $only', async ({ tied, only }) => {
    const model = tinyModel(9, { tie_word_embeddings: tied }, 0.3);
    const samples = fixedSamples(model.config.vocab_size, 7, 5);
    const batch = padBatch(samples.map((s) => s.tokens));
    const mask = samples.flatMap((s) => [...s.lossMask, ...Array<number>(batch.width - s.tokens.length).fill(0)]);
    const base: LogProbOptions = { temperature: 0.7, only: only ? mask : undefined };
    const calls = fusedKernelCount();
    const plain = await evaluate(model, { ...base, headChunkRows: Infinity });
    const chunked = await evaluate(model, { ...base, headChunkRows: 3 });
    if (fused) expect(fusedKernelCount()).toBeGreaterThan(calls);
    else expect(fusedKernelCount()).toBe(calls);
    // The premise: the trained rows are not a multiple of the chunk (a ragged last chunk), and nothing is trivial.
    const rows = only
      ? mask.filter((m, i) => m === 1 && i % batch.width > 0).length
      : samples.length * (batch.width - 1);
    expect(rows % 3).not.toBe(0);
    expect(Math.max(...plain.entropy)).toBeGreaterThan(0.1);

    expectClose(chunked.logp, plain.logp, 'logp');
    expectClose(chunked.entropy, plain.entropy, 'entropy');
    expectClose(chunked.logpOnly, plain.logpOnly, 'logp without entropy');
    expect(chunked.loss).toBeCloseTo(plain.loss, 3);
    const names = [...model.trainable().keys()];
    let headScale = 0;
    plain.grads.forEach((g, i) => {
      expectClose(chunked.grads[i]!, g, `d ${names[i]}`);
      expectClose(chunked.logpOnlyGrads[i]!, plain.logpOnlyGrads[i]!, `d ${names[i]} (logp only)`);
      if (names[i] === (tied ? 'embed' : 'lm_head')) headScale = worst(g, g).scale;
    });
    expect(headScale).toBeGreaterThan(1e-2); // the head's gradient flows (and is compared above)
    model.dispose();
  });

  it('under LoRA (a frozen head) the adapters get the unchunked gradients', async () => {
    const model = tinyModel(10, { tie_word_embeddings: true }, 0.3);
    const fresh = LoraAdapters.create(
      model.config,
      { rank: 2, alpha: 4, dropout: 0, targets: ['q_proj', 'up_proj'] },
      new Rng(2),
    );
    const t = await fresh.toTensors();
    fresh.dispose();
    const rng = new Rng(3);
    for (const [name, v] of t) {
      if (name.endsWith('.B')) for (let i = 0; i < v.data.length; i++) v.data[i] = rng.normal() * 0.2;
    }
    model.lora = LoraAdapters.fromTensors(
      model.config,
      { rank: 2, alpha: 4, dropout: 0, targets: ['q_proj', 'up_proj'] },
      t,
    );
    const plain = await evaluate(model, { temperature: 1.3, headChunkRows: Infinity });
    const chunked = await evaluate(model, { temperature: 1.3, headChunkRows: 3 });
    expectClose(chunked.logp, plain.logp, 'logp');
    plain.grads.forEach((g, i) => expectClose(chunked.grads[i]!, g, `adapter gradient ${i}`));
    expect(Math.max(...plain.grads.map((g) => worst(g, g).scale))).toBeGreaterThan(1e-3);
    model.lora.dispose();
    model.lora = null;
    model.dispose();
  });
});

describe('the chunked head’s memory', () => {
  beforeAll(() => useBackend('wasm'));

  it('during a gradient at V = 8,192 is a fraction of one batch’s logits, the unchunked head’s several', async () => {
    const V = 8192;
    const model = tinyModel(12, { vocab_size: V, hidden_size: 32, tie_word_embeddings: true }, 0.1);
    const rng = new Rng(4);
    // Many short rows: the head's [M, V] outweighs the rest of the model (attention is [B, heads, T, T]).
    const B = 32;
    const T = 33;
    const batch = padBatch(Array.from({ length: B }, () => Array.from({ length: T }, () => rng.int(V))));
    /** Peak bytes of tensors above the start while `loss`'s gradients are computed (and then disposed). */
    const peakOf = async (loss: () => tf.Scalar) => {
      const before = tf.memory().numBytes;
      const info = await tf.profile(() => {
        const { value, grads } = tf.variableGrads(loss, model.variables());
        tf.dispose([value, ...Object.values(grads)]);
      });
      expect(tf.memory().numBytes).toBe(before); // nothing leaked
      return info.peakBytes - before;
    };
    const withHead = (chunkRows: number) =>
      peakOf(() => {
        const { logp, entropy } = tokenLogProbs(model, batch, {
          temperature: 0.9,
          entropy: true,
          headChunkRows: chunkRows,
        });
        return tf.sum<tf.Scalar>(tf.sub(logp, tf.mul(entropy!, 0.1)));
      });
    // The same rows through the model up to the final norm: what any head adds comes on top of this.
    const { positions, keyMask } = rightPaddedLayout(batch.lengths, T - 1);
    const ids = Int32Array.from(
      { length: B * (T - 1) },
      (_, i) => batch.ids[Math.floor(i / (T - 1)) * T + (i % (T - 1))]!,
    );
    const trunk = await peakOf(() => {
      const { hidden } = model.forwardHidden({ ids, batch: B, positions, keyMask, differentiable: true });
      return tf.sum<tf.Scalar>(tf.square(hidden));
    });
    const plain = (await withHead(Infinity)) - trunk;
    const chunked = (await withHead(4)) - trunk;
    const logitsBytes = B * (T - 1) * V * 4; // 32 MiB
    const mib = (x: number) => `${(x / 2 ** 20).toFixed(1)} MiB`;
    const figures = `the head adds ${mib(plain)} unchunked, ${mib(chunked)} chunked, to the rest's ${mib(trunk)}`;
    // Unchunked, the logits and their log-softmax stay for the backward pass; chunked, a chunk's [4, V] temporaries
    // and a few tensors the size of W [V, D] (its gradients and their sum) are all there is.
    expect(plain, figures).toBeGreaterThan(1.5 * logitsBytes);
    expect(chunked, figures).toBeLessThan(logitsBytes / 4);
    model.dispose();
  });
});
