/**
 * TensorBoard event files (`events.out.tfevents.*`), read for their scalars: how MARTI logs its training metrics
 * (marti/trainer/ppo_trainer.py and multi_agent_ppotrainer.py: torch.utils.tensorboard's SummaryWriter in
 * `<--use_tensorboard>/<--wandb_run_name>/`, `add_scalar(f"train/{k}", v, global_step)`, per agent
 * `train/<agent_key>/<k>` and `agent_<i>_step/train/<k>` on the agent's own step axis, `eval/<k>`, and the samples as
 * `add_text`).
 *
 * The file is TFRecord framing (tensorflow/core/lib/io/record_writer.cc): per record a little-endian uint64 length,
 * the masked CRC-32C of those 8 bytes, the data, and the masked CRC-32C of the data. Each record's data is an `Event`
 * protobuf (tensorflow/core/util/event.proto: wall_time = 1, step = 2, file_version = 3, summary = 5), decoded with
 * protobufjs from the few fields read here (the rest are skipped as unknown). A `Summary.Value` (summary.proto) is a
 * scalar when it has `simple_value` (= 2, what add_scalar writes), or a rank-0 numeric `tensor` (= 8) whose metadata
 * names the `scalars` plugin or the scalar data class (what TF 2's tf.summary.scalar writes); text, images and
 * histograms are skipped.
 *
 * A damaged record is one warning naming the file, the record's number and its byte offset, and the rest is read: a
 * record whose data checksum fails, or that does not decode, is skipped; a length whose checksum fails cannot be
 * trusted to find the next record, so the rest of that file is skipped; a file that ends inside a record (a writer
 * killed mid-write) loses that record.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import type * as Protobuf from 'protobufjs';

/** The subset of event.proto, summary.proto, tensor.proto and tensor_shape.proto that is read. */
const SCHEMA = {
  nested: {
    Event: {
      fields: {
        wall_time: { type: 'double', id: 1 },
        step: { type: 'int64', id: 2 },
        file_version: { type: 'string', id: 3 },
        summary: { type: 'Summary', id: 5 },
      },
    },
    Summary: { fields: { value: { rule: 'repeated', type: 'Value', id: 1 } } },
    Value: {
      fields: {
        tag: { type: 'string', id: 1 },
        simple_value: { type: 'float', id: 2 },
        tensor: { type: 'TensorProto', id: 8 },
        metadata: { type: 'SummaryMetadata', id: 9 },
      },
    },
    SummaryMetadata: {
      fields: {
        plugin_data: { type: 'PluginData', id: 1 },
        data_class: { type: 'int32', id: 4 },
      },
    },
    PluginData: { fields: { plugin_name: { type: 'string', id: 1 } } },
    TensorProto: {
      fields: {
        dtype: { type: 'int32', id: 1 },
        tensor_shape: { type: 'TensorShapeProto', id: 2 },
        tensor_content: { type: 'bytes', id: 4 },
        float_val: { rule: 'repeated', type: 'float', id: 5 },
        double_val: { rule: 'repeated', type: 'double', id: 6 },
        int_val: { rule: 'repeated', type: 'int32', id: 7 },
        int64_val: { rule: 'repeated', type: 'int64', id: 10 },
      },
    },
    TensorShapeProto: { fields: { dim: { rule: 'repeated', type: 'Dim', id: 2 } } },
    Dim: { fields: { size: { type: 'int64', id: 1 } } },
  },
};
let eventType: Protobuf.Type | null = null;
/**
 * The Event message type, built on first use: protobufjs is loaded by `import marti` only, not on every start of the
 * CLI and its run workers (it cost 40–60 ms there).
 */
function eventMessage(): Protobuf.Type {
  if (eventType) return eventType;
  const protobuf = createRequire(import.meta.url)('protobufjs') as typeof Protobuf;
  return (eventType = protobuf.Root.fromJSON(SCHEMA).lookupType('Event'));
}

/** tensorflow DataType values of the numeric scalars read. */
const DT = { FLOAT: 1, DOUBLE: 2, INT32: 3, INT64: 9, HALF: 19 } as const;
/** SummaryMetadata.DataClass DATA_CLASS_SCALAR. */
const DATA_CLASS_SCALAR = 1;

type Int64 = number | { toNumber(): number };
interface DecodedEvent {
  wall_time?: number;
  step?: Int64;
  summary?: { value?: DecodedValue[] };
}
interface DecodedValue {
  tag?: string;
  simple_value?: number;
  tensor?: {
    dtype?: number;
    tensor_shape?: { dim?: unknown[] };
    tensor_content?: Uint8Array;
    float_val?: number[];
    double_val?: number[];
    int_val?: number[];
    int64_val?: Int64[];
  };
  metadata?: { plugin_data?: { plugin_name?: string }; data_class?: number };
}

export interface ScalarPoint {
  tag: string;
  step: number;
  /** Seconds since the epoch, as the writer stamped the event. */
  wallTime: number;
  value: number;
}

const toNumber = (v: Int64 | undefined): number => (v === undefined ? 0 : typeof v === 'number' ? v : v.toNumber());

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as TFRecord framing uses it.
const CRC32C_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();

export function crc32c(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC32C_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** TFRecord's masked CRC: rotated right by 15 bits plus a constant (crc32c.h Mask). */
export function maskedCrc32c(bytes: Uint8Array): number {
  const c = crc32c(bytes);
  return ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** A float32 as the shortest decimal that reads back as the same float32 (0.2f is 0.2, not 0.20000000298023224). */
export function float32Decimal(v: number): number {
  if (!Number.isFinite(v)) return v;
  const f = Math.fround(v);
  for (let p = 1; p < 10; p++) {
    const d = Number(f.toPrecision(p));
    if (Math.fround(d) === f) return d;
  }
  return f;
}

/** A Summary.Value's number when it is a scalar, else null. */
function scalarOf(v: DecodedValue): number | null {
  if (v.simple_value !== undefined && v.simple_value !== null && !v.tensor) return float32Decimal(v.simple_value);
  const t = v.tensor;
  if (!t) return null;
  const md = v.metadata;
  const scalarKind = md?.plugin_data?.plugin_name === 'scalars' || md?.data_class === DATA_CLASS_SCALAR;
  if (!scalarKind || (t.tensor_shape?.dim?.length ?? 0) !== 0) return null;
  if (t.float_val?.length) return float32Decimal(t.float_val[0]!);
  if (t.double_val?.length) return t.double_val[0]!;
  if (t.int_val?.length && t.dtype !== DT.HALF) return t.int_val[0]!;
  if (t.int64_val?.length) return toNumber(t.int64_val[0]);
  const c = t.tensor_content;
  if (c && c.length) {
    const view = new DataView(c.buffer, c.byteOffset, c.byteLength);
    if (t.dtype === DT.FLOAT && c.length >= 4) return float32Decimal(view.getFloat32(0, true));
    if (t.dtype === DT.DOUBLE && c.length >= 8) return view.getFloat64(0, true);
    if (t.dtype === DT.INT32 && c.length >= 4) return view.getInt32(0, true);
    if (t.dtype === DT.INT64 && c.length >= 8) return Number(view.getBigInt64(0, true));
  }
  return null;
}

/**
 * Every scalar in one event file, in file order; `warn` is told each damaged record (`<name>: record N (byte B): …`).
 */
export function readScalars(file: string, name: string, warn: (message: string) => void): ScalarPoint[] {
  const EventType = eventMessage();
  const buf = fs.readFileSync(file);
  const out: ScalarPoint[] = [];
  let at = 0;
  for (let n = 1; at < buf.length; n++) {
    const where = `${name}: record ${n} (byte ${at})`;
    if (buf.length - at < 12) {
      warn(`${where}: cut short (the file ends inside its header); skipped`);
      break;
    }
    const lenBytes = buf.subarray(at, at + 8);
    if (maskedCrc32c(lenBytes) !== buf.readUInt32LE(at + 8)) {
      warn(`${where}: its length's checksum does not match; the rest of the file (${buf.length - at} bytes) skipped`);
      break;
    }
    const len = Number(buf.readBigUInt64LE(at));
    const dataAt = at + 12;
    if (buf.length - dataAt < len + 4) {
      warn(`${where}: cut short (the file ends inside it); skipped`);
      break;
    }
    const data = buf.subarray(dataAt, dataAt + len);
    at = dataAt + len + 4;
    if (maskedCrc32c(data) !== buf.readUInt32LE(dataAt + len)) {
      warn(`${where}: its data's checksum does not match; record skipped`);
      continue;
    }
    let ev: DecodedEvent; // the shape is the protobuf schema's above (decode checks each field's wire type)
    try {
      ev = EventType.toObject(EventType.decode(data), { defaults: false });
    } catch (err) {
      warn(`${where}: not a TensorBoard Event (${(err as Error).message.split('\n')[0]}); record skipped`);
      continue;
    }
    for (const v of ev.summary?.value ?? []) {
      const value = scalarOf(v);
      if (value === null || v.tag === undefined) continue;
      out.push({ tag: v.tag, step: toNumber(ev.step), wallTime: ev.wall_time ?? 0, value });
    }
  }
  return out;
}

/** TensorBoard event files' names (`events.out.tfevents.<time>.<host>.<pid>[.<n>]`). */
export const EVENT_FILE = /^events\.out\.tfevents\./;

/** MARTI's per-agent copies on each agent's own step axis (`agent_<i>_step/train/<k>`): not the run's steps. */
const OTHER_AXIS = /^agent_\d+_step\//;

export interface StepScalars {
  /** The newest event's wall time in the step (seconds). */
  time: number;
  values: Record<string, number>;
}

/**
 * The scalars of several event files by step (a later file, by name, overrides an earlier one's value of the same tag
 * and step, as a resumed run's does). Tags on another step axis are left out and returned by name.
 */
export function scalarsByStep(
  files: { file: string; name: string }[],
  warn: (message: string) => void,
): { steps: Map<number, StepScalars>; tags: string[]; otherAxis: string[]; points: number } {
  const steps = new Map<number, StepScalars>();
  const tags = new Set<string>();
  const otherAxis = new Set<string>();
  let points = 0;
  for (const { file, name } of [...files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    for (const p of readScalars(file, name, warn)) {
      if (OTHER_AXIS.test(p.tag)) {
        otherAxis.add(p.tag);
        continue;
      }
      const row = steps.get(p.step) ?? { time: 0, values: {} };
      row.values[p.tag] = p.value;
      row.time = Math.max(row.time, p.wallTime);
      steps.set(p.step, row);
      tags.add(p.tag);
      points++;
    }
  }
  return { steps, tags: [...tags].sort(), otherAxis: [...otherAxis].sort(), points };
}
