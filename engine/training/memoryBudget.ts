/**
 * Memory a run will need, estimated from its config before anything is allocated, against what this machine has: a
 * config that cannot fit (a 68.7-billion-parameter model, 8192 MARS trajectories of the medium model at once) is
 * refused at validation with one line naming the fields and the figure, instead of a worker allocating until the
 * kernel kills it. `budget.ignoreMemoryCheck: true` overrides.
 *
 * No TensorFlow.js here (the schema loads this in the app's main process). The per-token activation figure and the
 * wasm heap are the ones engine/rl/policyUpdate.ts chunks its passes by (engine/rl/passSize.ts, below this floor), on
 * the path the passes will take: on wasm without the native fused ops a token keeps twice the bytes and a pass takes
 * fewer tokens (nativeFusedExpected).
 *
 * The estimate is the larger of the two phases of a step (the rollout's KV cache is freed before the update), plus
 * what lives throughout (weights, Adam's two moments, gradients, the KL reference), plus pretraining's batch (one
 * supervised pass, not chunked). It is rough on purpose, erring high by the constants below; shipped presets use a
 * small fraction of a laptop's memory (tests/unit/runs/memoryBudget.test.ts checks every one).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../base/projectRoot';
import {
  MODEL_SIZES,
  parameterCount,
  parseLlamaConfig,
  sizedConfig,
  headDim,
  type LlamaConfig,
  type ModelSize,
} from '../model/config';
import { passActivationBytes, tokensPerPass, WASM_HEAP_BYTES } from '../rl/passSize';
import { defaultAddonPath, nativeFusedRequest, nativeRequest } from '../tensor/native/addon';
import { UserError } from '../base/userError';
import { MAX_MODEL_CONFIG_BYTES, readRegularText } from '../base/regularFile';

const FLOAT = 4;
/** Per trained parameter: the weight, Adam's two moments, the gradient, and the chunks' summed gradient. */
const TRAINED_COPIES = 5;
/** Vocabulary assumed when the task's is only known once its worlds are built (MARS and MARTI: ~200–1000 words). */
const WORD_VOCAB = 2048;
/** MARTI prompt tokens (role, task statement, tests, parent program) besides the program itself. */
const MARTI_PROMPT = 256;

export interface MemoryEstimate {
  /** Parameters of every model the run holds (trained, frozen, reference). */
  parameters: number;
  /** Weights, Adam state and gradients: held for the whole run. */
  resident: number;
  /** The rollout's KV cache at its largest. */
  rollout: number;
  /** One update pass's activations (and attention scores). */
  update: number;
  /** One supervised pretraining batch's activations. */
  pretrain: number;
  total: number;
  /** The part that dominates: which fields to name, and which path the issue goes on. */
  culprit: { path: string; fields: string; what: string };
}

/** A loose view of a validated config: every algorithm's sections, as far as the estimate reads them. */
interface ConfigView {
  algorithm: string;
  backend?: string;
  model: { size: ModelSize; from: { kind: string; path?: string }; [k: string]: unknown };
  rl: { klCoef: number };
  pretrain: { batch: number };
  budget: { ignoreMemoryCheck?: boolean };
  task?: Record<string, unknown>;
  mars?: Record<string, unknown>;
  marti?: {
    configuration: string;
    agents: { size?: ModelSize; from?: { kind: string; path?: string } }[];
    problemsPerStep: number;
    nodesPerTree: number;
    maxProgramTokens?: number;
  };
}

const num = (v: unknown, dflt: number): number => (typeof v === 'number' && Number.isFinite(v) ? v : dflt);

/**
 * A checkpoint's config.json, read up to the bound the loader itself holds it to (so a config.json padded past a
 * smaller bound cannot skip the estimate), without blocking on a FIFO; null when it is missing, not a regular file,
 * too large or does not parse: the loader refuses it then, before anything is allocated.
 */
function checkpointArchitecture(p: string | undefined): LlamaConfig | null {
  if (!p) return null;
  const dir = path.isAbsolute(p) || fs.existsSync(p) ? p : path.join(PROJECT_ROOT, p);
  try {
    return parseLlamaConfig(JSON.parse(readRegularText(path.join(dir, 'config.json'), MAX_MODEL_CONFIG_BYTES)));
  } catch {
    return null;
  }
}

function architecture(
  model: ConfigView['model'],
  vocab: number,
  size?: ModelSize,
  from?: { kind: string; path?: string },
): LlamaConfig | null {
  const source = from ?? model.from;
  if (source.kind === 'checkpoint') return checkpointArchitecture(source.path);
  const { size: ownSize, initStd: _s, from: _f, ...overrides } = model;
  const chosen = size ?? ownSize;
  if (!(chosen in MODEL_SIZES)) return null;
  try {
    return sizedConfig(chosen, { ...(overrides as Partial<LlamaConfig>), vocab_size: vocab });
  } catch (err) {
    if (err instanceof UserError) return null; // an inconsistent architecture: the schema says so already
    throw err;
  }
}

/** Bytes of keys and values cached per token across all layers. */
function kvBytesPerToken(c: LlamaConfig): number {
  return c.num_hidden_layers * 2 * c.num_key_value_heads * headDim(c) * FLOAT;
}

/**
 * Whether the native fused ops (tensor/native/fused.ts) will run a pass on `backend`, told before TensorFlow.js loads:
 * wasm, an addon built (native/build's, or MARS_LAB_NATIVE_PATH's) and neither MARS_LAB_NATIVE=0 nor
 * MARS_LAB_NATIVE_FUSED=0. What fusedOps() answers once the backend is up, which policyUpdate sizes its passes by.
 */
export function nativeFusedExpected(backend: string | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  if (backend !== 'wasm') return false;
  try {
    if (nativeRequest(env) === 'off' || nativeFusedRequest(env) === 'off') return false;
  } catch {
    return false; // a value the backend will refuse in its own line
  }
  const explicit = env.MARS_LAB_NATIVE_PATH?.trim();
  const file = explicit ? path.resolve(explicit) : defaultAddonPath();
  return file !== null && fs.existsSync(file);
}

/** The path a pass runs on: the backend, and whether the native fused ops run it (passSize's `fused`). */
interface PassPath {
  backend: string | undefined;
  fused: boolean;
}

/**
 * Activations of `tokens` padded tokens in rows of `seq`, in passes of at most `perPassCap` (policyUpdate's chunks), a
 * token costing what it costs on `on` (passSize.passLayerBytesPerToken).
 */
function passBytes(c: LlamaConfig, tokens: number, seq: number, on: PassPath, perPassCap = Infinity): number {
  const perPass = Math.min(perPassCap, Math.max(tokens, seq));
  const rows = Math.max(1, Math.ceil(perPass / Math.max(1, seq)));
  // The scores of every layer are kept for the backward pass: rows × heads × seq² × layers, scores and softmax and
  // their gradients (≈ 3 copies).
  const scores = rows * c.num_attention_heads * seq * seq * c.num_hidden_layers * FLOAT * 3;
  return passActivationBytes(c, perPass, on.backend, on.fused) + scores;
}

/** The shape of one step: rollout rows and sequence lengths, per algorithm (what dominates memory). */
function stepShape(
  cfg: ConfigView,
  c: LlamaConfig,
): {
  rows: number;
  seq: number;
  extraRows: number;
  extraSeq: number;
  rowsField: string;
  rowsPath: string;
  pretrainSeq: number;
} {
  const t = cfg.task ?? {};
  const ctx = c.max_position_embeddings;
  if (cfg.algorithm === 'mars') {
    const m = cfg.mars ?? {};
    const rows = num(t.questionsPerStep, 8) * num(t.groupSize, 8);
    const seq = Math.min(ctx, num(m.sys2PromptMax, 64) + num(m.sys2ResponseMax, 640));
    // System 1 windows of one turn: up to topK per searching trajectory, cached beside System 2's rows.
    const sys1Seq = Math.min(ctx, num(m.sys1PromptMax, 256) + num(m.sys1ResponseMax, 48));
    const sys1Rows = m.sys1Params === 'off' || m.sys1Params === 'oracle' ? 0 : rows * num(m.topK, 5);
    // The pretraining primer mixes pages, System 1 windows and System 2 transcripts of 1..maxTurns turns, padded to
    // the longest of a batch: typically about half System 2's response budget, not all of it.
    const pretrainSeq = Math.min(ctx, Math.max(sys1Seq, num(m.sys2PromptMax, 64) + num(m.sys2ResponseMax, 640) / 2));
    return {
      rows,
      seq,
      extraRows: sys1Rows,
      extraSeq: sys1Seq,
      rowsField: 'task.questionsPerStep × task.groupSize',
      rowsPath: 'task.groupSize',
      pretrainSeq,
    };
  }
  if (cfg.algorithm === 'marti') {
    const mt = cfg.marti!;
    const seq = Math.min(ctx, MARTI_PROMPT + num(mt.maxProgramTokens, 48));
    return {
      rows: mt.problemsPerStep * mt.nodesPerTree,
      seq,
      extraRows: 0,
      extraSeq: 0,
      rowsField: 'marti.problemsPerStep × marti.nodesPerTree',
      rowsPath: 'marti.nodesPerTree',
      pretrainSeq: seq,
    };
  }
  const seq = Math.min(ctx, 2 * num(t.length, 3) + 8);
  return {
    rows: num(t.groupSize, 8) * num(t.promptsPerStep, 1),
    seq,
    extraRows: 0,
    extraSeq: 0,
    rowsField: 'task.groupSize × task.promptsPerStep',
    rowsPath: 'task.groupSize',
    pretrainSeq: seq,
  };
}

/** The estimate, or null when the architecture is not known before loading (a checkpoint without a readable config). */
export function estimateRunMemory(config: unknown): MemoryEstimate | null {
  const cfg = config as ConfigView;
  if (!cfg?.model?.from || !cfg.rl || !cfg.pretrain) return null;
  const vocab = cfg.algorithm === 'seqgrpo' ? num(cfg.task?.symbols, 16) + 8 : WORD_VOCAB;
  const main = architecture(cfg.model, vocab);
  if (!main) return null;
  // Every trained parameter set, and the frozen copies.
  const trained: LlamaConfig[] = [main];
  let frozen = 0;
  if (cfg.algorithm === 'mars' && cfg.mars?.sys1Params === 'separate') trained.push(main);
  if (cfg.algorithm === 'mars' && cfg.mars?.sys1Params === 'frozen') frozen += parameterCount(main);
  if (cfg.algorithm === 'marti' && cfg.marti?.configuration === 'heterogeneous') {
    trained.length = 0;
    for (const a of cfg.marti.agents) {
      const c = architecture(cfg.model, vocab, a.size, a.from);
      if (!c) return null;
      trained.push(c);
    }
  }
  const trainedParams = trained.reduce((s, c) => s + parameterCount(c), 0);
  if (cfg.rl.klCoef > 0) frozen += trainedParams; // the reference policy of the KL term
  const resident = (trainedParams * TRAINED_COPIES + frozen) * FLOAT;

  const shape = stepShape(cfg, main);
  const biggest = trained.reduce((a, c) => (parameterCount(c) > parameterCount(a) ? c : a), main);
  const rollout =
    (shape.rows * shape.seq + shape.extraRows * shape.extraSeq) * kvBytesPerToken(biggest) +
    shape.rows * biggest.vocab_size * FLOAT;
  const on: PassPath = { backend: cfg.backend, fused: nativeFusedExpected(cfg.backend) };
  const update = passBytes(
    biggest,
    shape.rows * shape.seq,
    shape.seq,
    on,
    tokensPerPass(cfg.backend, biggest, parameterCount(biggest), on.fused),
  );
  const pretrain = passBytes(main, cfg.pretrain.batch * shape.pretrainSeq, shape.pretrainSeq, on);
  const total = resident + Math.max(rollout, update, pretrain);

  const modelFields =
    cfg.model.from.kind === 'checkpoint'
      ? 'model.from.path (its config.json)'
      : 'model.size, model.hidden_size, model.intermediate_size, model.num_hidden_layers';
  const parts: [number, MemoryEstimate['culprit']][] = [
    [resident, { path: 'model', fields: modelFields, what: 'for weights, Adam state and gradients' }],
    [
      rollout,
      {
        path: shape.rowsPath,
        fields: `${shape.rowsField} (and the sequence budgets)`,
        what: "for the rollout's key/value cache",
      },
    ],
    [update, { path: 'model', fields: modelFields, what: "for one update pass's activations" }],
    [pretrain, { path: 'pretrain.batch', fields: 'pretrain.batch', what: "for one pretraining batch's activations" }],
  ];
  const culprit = parts.reduce((a, b) => (b[0] > a[0] ? b : a))[1];
  const parameters = trainedParams + frozen;
  return { parameters, resident, rollout, update, pretrain, total, culprit };
}

/** What a run may use here: the machine's memory, or the wasm heap when the config forces wasm. */
export function memoryLimit(backend: string | undefined, totalmem = os.totalmem()): { bytes: number; what: string } {
  if (backend === 'wasm' && WASM_HEAP_BYTES < totalmem) {
    return { bytes: WASM_HEAP_BYTES, what: 'the wasm backend has a 4 GiB heap' };
  }
  return { bytes: totalmem, what: `this machine has ${formatBytes(totalmem, true)}` };
}

export function formatBytes(n: number, binary = false): string {
  const base = binary ? 1024 : 1000;
  const units = binary ? ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] : ['B', 'kB', 'MB', 'GB', 'TB', 'PB'];
  let i = 0;
  while (n >= base && i < units.length - 1) {
    n /= base;
    i++;
  }
  return `${n >= 100 || i === 0 ? n.toFixed(0) : n.toFixed(1)} ${units[i]}`;
}

function formatCount(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)}e9`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  return String(Math.round(n));
}

/**
 * Set to 1 to skip the check everywhere: for a run made on a larger machine and resumed or evaluated on this one,
 * whose config (in run.json, in its checkpoints) cannot take a --set.
 */
export const IGNORE_MEMORY_ENV = 'MARS_LAB_IGNORE_MEMORY_CHECK';

/**
 * Why the config will not fit in memory here, as an issue on the dominant field, or undefined when it fits, when it
 * cannot be told before loading, or when `budget.ignoreMemoryCheck` is set.
 */
export function memoryProblem(
  config: unknown,
  totalmem = os.totalmem(),
): { path: string; message: string } | undefined {
  const cfg = config as ConfigView;
  if (cfg?.budget?.ignoreMemoryCheck === true || process.env[IGNORE_MEMORY_ENV] === '1') return undefined;
  const est = estimateRunMemory(config);
  if (!est) return undefined;
  const limit = memoryLimit(cfg.backend, totalmem);
  if (est.total <= limit.bytes) return undefined;
  return {
    path: est.culprit.path,
    message:
      `${est.culprit.fields}: ${formatCount(est.parameters)} parameters and one step need ≈ ${formatBytes(est.total)}, most of it ` +
      `${est.culprit.what}; ${limit.what}; lower them, or set budget.ignoreMemoryCheck to true (--set budget.ignoreMemoryCheck=true; ` +
      `for a run made elsewhere, ${IGNORE_MEMORY_ENV}=1)`,
  };
}

/** LoRA's trainable parameters at `rank` on every linear projection of every layer (q, k, v, o, gate, up, down). */
export function loraParameterCount(c: LlamaConfig, rank: number): number {
  const hd = headDim(c);
  const q = c.num_attention_heads * hd;
  const kv = c.num_key_value_heads * hd;
  const h = c.hidden_size;
  const i = c.intermediate_size;
  const perLayer = rank * (h + q + 2 * (h + kv) + (q + h) + 2 * (h + i) + (i + h));
  return perLayer * c.num_hidden_layers;
}

/** What `model info` reports: memory to sample, to train fully and to train with LoRA, at a stated shape. */
export interface ModelMemory {
  shape: { sampleRows: number; trainRows: number; seq: number; loraRank: number };
  sample: number;
  full: number;
  lora: number;
  limit: { bytes: number; what: string };
}

/**
 * The three figures for a model held as float32 (GGUF's quantised tensors are dequantised on load): sampling `rows`
 * sequences of `seq` tokens (weights, KV cache, a row of logits each); a GRPO step over `trainRows` × `seq` tokens
 * trained fully (the weights' TRAINED_COPIES, a KL reference, one pass's activations); and the same with LoRA at
 * `loraRank` (the base frozen once, the adapters' copies, the same activations per pass: LoRA saves optimizer state,
 * not activations; on wasm its passes are longer, being sized by the trained variables). On wasm without the native
 * fused ops (`fused`, nativeFusedExpected by default) a token costs UNFUSED_LAYER_FACTOR times its layers' bytes and the
 * passes are shorter, as policyUpdate runs them. Rough as estimateRunMemory is, erring high.
 */
export function modelMemory(
  c: LlamaConfig,
  opts: {
    backend?: string;
    fused?: boolean;
    sampleRows?: number;
    trainRows?: number;
    seq?: number;
    loraRank?: number;
  } = {},
  totalmem = os.totalmem(),
): ModelMemory {
  const shape = {
    sampleRows: opts.sampleRows ?? 16,
    trainRows: opts.trainRows ?? 16,
    seq: Math.min(opts.seq ?? 256, c.max_position_embeddings),
    loraRank: opts.loraRank ?? 16,
  };
  const params = parameterCount(c);
  const weights = params * FLOAT;
  const sample = weights + shape.sampleRows * (shape.seq * kvBytesPerToken(c) + c.vocab_size * FLOAT);
  const tokens = shape.trainRows * shape.seq;
  // policyUpdate sizes its passes by the trained variables: every weight, or under LoRA the adapters only.
  const loraParams = loraParameterCount(c, shape.loraRank);
  const on: PassPath = { backend: opts.backend, fused: opts.fused ?? nativeFusedExpected(opts.backend) };
  const full =
    weights * (TRAINED_COPIES + 1) +
    passBytes(c, tokens, shape.seq, on, tokensPerPass(on.backend, c, params, on.fused));
  const lora =
    weights +
    loraParams * FLOAT * TRAINED_COPIES +
    passBytes(c, tokens, shape.seq, on, tokensPerPass(on.backend, c, loraParams, on.fused));
  return { shape, sample, full, lora, limit: memoryLimit(opts.backend, totalmem) };
}

/** A bound on a chat prompt's tokens (the template's system text and the question) when sizing a real-model run. */
export const CHAT_PROMPT_TOKENS = 96;

/** What a real-model run needs a step here, against what it may use, and why not when it does not fit. */
export interface RealModelMemoryPlan {
  need: number;
  limit: { bytes: number; what: string };
  /** One line naming the fields to lower; absent when it fits or the check is off. */
  problem?: string;
}

/**
 * A real-model run's plan (chatgrpo), once the model's header is read and before its weights are: `model info`'s
 * figures at the run's shape (rows = replies a step, seq = a prompt's bound plus the reply budget), LoRA's or full
 * training's, against the limit here. The problem names the fields to lower; it is left out when the check is off
 * (`budget.ignoreMemoryCheck`, MARS_LAB_IGNORE_MEMORY_CHECK=1).
 */
export function realModelMemoryPlan(
  c: LlamaConfig,
  run: {
    backend?: string;
    /** Whether the native fused ops run the passes (modelMemory's; nativeFusedExpected when left out). */
    fused?: boolean;
    ignoreMemoryCheck?: boolean;
    rows: number;
    replyTokens: number;
    /** A bound on a prompt's tokens (CHAT_PROMPT_TOKENS when left out: a short question through the template). */
    promptTokens?: number;
    loraRank: number | null;
    rowsField: string;
    /** The one change of the config's own fields that brings the rows down to `maxRows` (null: none does). */
    fewerRows?: (maxRows: number) => string | null;
  },
  totalmem = os.totalmem(),
): RealModelMemoryPlan {
  const seq = (run.promptTokens ?? CHAT_PROMPT_TOKENS) + run.replyTokens;
  const needAt = (rows: number, loraRank: number | null): { need: number; limit: ModelMemory['limit'] } => {
    const m = modelMemory(
      c,
      {
        backend: run.backend,
        fused: run.fused,
        sampleRows: Math.min(16, rows),
        trainRows: rows,
        seq,
        loraRank: loraRank ?? 16,
      },
      totalmem,
    );
    return { need: Math.max(m.sample, loraRank === null ? m.full : m.lora), limit: m.limit };
  };
  const { need, limit } = needAt(run.rows, run.loraRank);
  const off = run.ignoreMemoryCheck === true || process.env[IGNORE_MEMORY_ENV] === '1';
  if (need <= limit.bytes || off) return { need, limit };
  // The one change that makes it fit: the most rows that fit (the need grows with the rows), or LoRA at rank 8.
  let lo = 0;
  let hi = run.rows - 1;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (needAt(mid, run.loraRank).need <= limit.bytes) lo = mid;
    else hi = mid - 1;
  }
  const fixes = [
    lo > 0 ? run.fewerRows?.(lo) : null,
    run.loraRank === null && needAt(run.rows, 8).need <= limit.bytes ? 'LoRA adapters (model.lora, rank 8)' : null,
  ].filter((f): f is string => !!f);
  const how = run.loraRank === null ? 'every weight trained' : `LoRA rank ${run.loraRank}`;
  const fit = fixes.length
    ? `it fits with ${fixes.join(', or with ')}`
    : 'lower the reply budget or the rows, or use a smaller model';
  const problem =
    `${run.rowsField}: ${run.rows} replies of up to ${seq} tokens on a model of ${formatCount(parameterCount(c))} ` +
    `parameters (${how}) need ≈ ${formatBytes(need)} a step; ${limit.what}; ${fit}; or set budget.ignoreMemoryCheck to true`;
  return { need, limit, problem };
}

/** The plan's problem alone (undefined when the run fits here or the check is off). */
export function realModelMemoryProblem(
  c: LlamaConfig,
  run: Parameters<typeof realModelMemoryPlan>[1],
  totalmem = os.totalmem(),
): string | undefined {
  return realModelMemoryPlan(c, run, totalmem).problem;
}
