/**
 * Sharded Hugging Face checkpoints (issue 30, item 3): `model.safetensors.index.json` maps every tensor name to one of
 * several shard files in the same folder (`{"metadata": {...}, "weight_map": {name: "model-00001-of-00002.safetensors",
 * ...}}`, what transformers' `save_pretrained(max_shard_size=...)` writes).
 *
 * Everything is checked before any tensor data are read: the index (zod), each shard's name (a plain file name in the
 * folder: an index must not reach outside it), each shard's header (readSafetensorsHeader), that every tensor is in
 * exactly the shard the index names and in no other, and the union against the config (checkHfTensors). Then the
 * shards are read one at a time and each tensor handed to the model builder and dropped, so loading holds the model
 * plus one shard, never a second copy of all the weights.
 */
import path from 'node:path';
import { z } from 'zod';
import { jsonParseProblem } from '../../base/boundedText';
import { readRegularText } from '../../base/regularFile';
import type { LlamaConfig } from '../config';
import type { LlamaModel } from '../llama';
import { HfModelBuilder, WeightsError, checkHfTensors } from './hfWeights';
import { readSafetensorsFile, readSafetensorsHeader } from './safetensors';

export const SHARD_INDEX_FILE = 'model.safetensors.index.json';

/** A real index is tens of kB (a 405B model's: a few MB); past this it is not an index. */
const MAX_INDEX_BYTES = 64 * 1024 * 1024;

const indexSchema = z.looseObject({
  metadata: z.looseObject({}).nullish(),
  weight_map: z.record(z.string().min(1), z.string().min(1)),
});

export interface ShardPlan {
  index: string;
  /** Shard path → the tensor names it holds, in the index's order of first mention. */
  shards: Map<string, string[]>;
}

function brief(s: string): string {
  return JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}…` : s);
}

/** Reads and checks the index of the folder `dir` and every shard's header against it; reads no tensor data. */
export async function planShards(
  dir: string,
): Promise<ShardPlan & { headers: Record<string, { shape: number[]; dtype: string }> }> {
  const index = path.join(dir, SHARD_INDEX_FILE);
  let raw: unknown;
  try {
    raw = JSON.parse(readRegularText(index, MAX_INDEX_BYTES));
  } catch (err) {
    if (err instanceof SyntaxError) throw new WeightsError(`${index}: not valid JSON (${jsonParseProblem(err)})`);
    throw err;
  }
  const parsed = indexSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new WeightsError(
      `${index}: field '${issue.path.join('.') || '(top)'}': ${issue.message} (expected {"weight_map": {tensor: shard file}})`,
    );
  }
  const shards = new Map<string, string[]>();
  for (const [tensor, shard] of Object.entries(parsed.data.weight_map)) {
    if (path.basename(shard) !== shard || shard === '.' || shard === '..' || shard.includes('\\')) {
      throw new WeightsError(
        `${index}: tensor ${brief(tensor)} is mapped to ${brief(shard)}, which is not a file name in the model's folder`,
      );
    }
    const file = path.join(dir, shard);
    if (!shards.has(file)) shards.set(file, []);
    shards.get(file)!.push(tensor);
  }
  if (shards.size === 0) throw new WeightsError(`${index}: its weight_map names no tensor`);
  // Every shard's header, and where each tensor really is.
  const headers: Record<string, { shape: number[]; dtype: string }> = {};
  const foundIn = new Map<string, string>();
  for (const [file, names] of shards) {
    let header: Awaited<ReturnType<typeof readSafetensorsHeader>>;
    try {
      header = await readSafetensorsHeader(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new WeightsError(
          `${file}: missing, but ${index} maps ${names.length} tensor(s) to it (the first: '${names[0]}')`,
        );
      }
      throw err;
    }
    for (const t of header.tensors) {
      const other = foundIn.get(t.name);
      if (other !== undefined) {
        throw new WeightsError(
          `tensor '${t.name}' is in two shards, ${other} and ${file}: the checkpoint is inconsistent`,
        );
      }
      foundIn.set(t.name, file);
      Object.defineProperty(headers, t.name, {
        value: { shape: t.shape, dtype: t.dtype },
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  for (const [file, names] of shards) {
    for (const name of names) {
      const at = foundIn.get(name);
      if (at !== file) {
        throw new WeightsError(
          `${index}: maps tensor '${name}' to ${path.basename(file)}, but ${at === undefined ? 'no shard' : path.basename(at)} holds it`,
        );
      }
    }
  }
  for (const [name, file] of foundIn) {
    if (!Object.hasOwn(parsed.data.weight_map, name)) {
      throw new WeightsError(`${file}: holds tensor '${name}', which ${index}'s weight_map does not name`);
    }
  }
  return { index, shards, headers };
}

/** Loads a sharded checkpoint's weights for a model of `config`, one shard in memory at a time. */
export async function loadShardedWeights(dir: string, config: LlamaConfig): Promise<LlamaModel> {
  const plan = await planShards(dir);
  checkHfTensors(config, plan.headers, plan.index);
  const builder = new HfModelBuilder(config, plan.index);
  try {
    for (const file of plan.shards.keys()) {
      const shard = await readSafetensorsFile(file);
      for (const name of Object.keys(shard.tensors)) {
        const t = shard.tensors[name]!;
        builder.add(name, { shape: t.shape, data: t.data as Float32Array });
        delete shard.tensors[name]; // the variable holds it now
      }
    }
    return builder.build();
  } catch (err) {
    builder.dispose();
    throw err;
  }
}
