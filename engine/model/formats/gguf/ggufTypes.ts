/**
 * The vocabulary of a GGUF file: its metadata value types, ggml's tensor types with their block sizes (so the reader
 * can check every tensor's byte span, even of a type it cannot dequantise), and the one error class of the GGUF
 * reader. Sizes are ggml's (`ggml-common.h`, `ggml.c` type_traits; gguf-py's GGML_QUANT_SIZES), ids are the enum
 * `ggml_type` as it stands in the file format; ids ggml retired (31–33, 36–38) keep the sizes files of their day used.
 */
import { UserError } from '../../../base/userError';

/** A GGUF file that cannot be read or used here; the message is one line naming the file and, where one is at fault, the key or tensor. */
export class GgufError extends UserError {}

/** Metadata value types (gguf.h `gguf_type`). */
export const GGUF_VALUE = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;

/** Fixed byte width of each scalar value type (strings and arrays have none). */
export const SCALAR_BYTES: Readonly<Record<number, number>> = {
  0: 1,
  1: 1,
  2: 2,
  3: 2,
  4: 4,
  5: 4,
  6: 4,
  7: 1,
  10: 8,
  11: 8,
  12: 8,
};

/** One ggml tensor type: its name, how many values a block holds and how many bytes a block takes. */
export interface GgmlType {
  id: number;
  name: string;
  blockSize: number;
  blockBytes: number;
}

const QK_K = 256;

const TYPES: Array<[number, string, number, number]> = [
  [0, 'F32', 1, 4],
  [1, 'F16', 1, 2],
  [2, 'Q4_0', 32, 2 + 16],
  [3, 'Q4_1', 32, 2 + 2 + 16],
  [6, 'Q5_0', 32, 2 + 4 + 16],
  [7, 'Q5_1', 32, 2 + 2 + 4 + 16],
  [8, 'Q8_0', 32, 2 + 32],
  [9, 'Q8_1', 32, 4 + 4 + 32],
  [10, 'Q2_K', QK_K, 2 + 2 + QK_K / 16 + QK_K / 4],
  [11, 'Q3_K', QK_K, 2 + QK_K / 4 + QK_K / 8 + 12],
  [12, 'Q4_K', QK_K, 2 + 2 + QK_K / 2 + 12],
  [13, 'Q5_K', QK_K, 2 + 2 + QK_K / 2 + QK_K / 8 + 12],
  [14, 'Q6_K', QK_K, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16],
  [15, 'Q8_K', QK_K, 4 + QK_K + QK_K / 8],
  [16, 'IQ2_XXS', QK_K, 2 + QK_K / 4],
  [17, 'IQ2_XS', QK_K, 2 + QK_K / 4 + QK_K / 32],
  [18, 'IQ3_XXS', QK_K, 2 + QK_K / 4 + QK_K / 8],
  [19, 'IQ1_S', QK_K, 2 + QK_K / 8 + QK_K / 16],
  [20, 'IQ4_NL', 32, 2 + 16],
  [21, 'IQ3_S', QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4],
  [22, 'IQ2_S', QK_K, 2 + QK_K / 4 + QK_K / 16],
  [23, 'IQ4_XS', QK_K, 2 + 2 + QK_K / 2 + QK_K / 64],
  [24, 'I8', 1, 1],
  [25, 'I16', 1, 2],
  [26, 'I32', 1, 4],
  [27, 'I64', 1, 8],
  [28, 'F64', 1, 8],
  [29, 'IQ1_M', QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32],
  [30, 'BF16', 1, 2],
  [31, 'Q4_0_4_4', 32, 2 + 16],
  [32, 'Q4_0_4_8', 32, 2 + 16],
  [33, 'Q4_0_8_8', 32, 2 + 16],
  [34, 'TQ1_0', QK_K, (QK_K - (4 * QK_K) / 64) / 5 + QK_K / 64 + 2],
  [35, 'TQ2_0', QK_K, QK_K / 4 + 2],
  [36, 'IQ4_NL_4_4', 32, 2 + 16],
  [37, 'IQ4_NL_4_8', 32, 2 + 16],
  [38, 'IQ4_NL_8_8', 32, 2 + 16],
  [39, 'MXFP4', 32, 1 + 16],
];

export const GGML_TYPES: ReadonlyMap<number, GgmlType> = new Map(
  TYPES.map(([id, name, blockSize, blockBytes]) => [id, { id, name, blockSize, blockBytes }]),
);

/** The types this reader turns into float32 (issue 30, item 3). */
export const DEQUANTISED_TYPES = ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q4_K', 'Q5_K', 'Q6_K'] as const;
export type DequantisedType = (typeof DEQUANTISED_TYPES)[number];

export function isDequantised(name: string): name is DequantisedType {
  return (DEQUANTISED_TYPES as readonly string[]).includes(name);
}

/** A metadata value: 64-bit integers are bigint (they may exceed 2^53), arrays keep their element type. */
export type GgufScalar = number | bigint | boolean | string;
/** Numeric arrays are typed arrays, so a header's arrays take about the memory their bytes take in the file. */
export type GgufItems =
  | string[]
  | boolean[]
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | Float32Array
  | Float64Array
  | BigUint64Array
  | BigInt64Array;
export interface GgufArray {
  itemType: number;
  items: GgufItems;
}
export type GgufValue = GgufScalar | GgufArray;

export function isGgufArray(v: GgufValue | undefined): v is GgufArray {
  return typeof v === 'object' && v !== null;
}

/** One tensor info, with its absolute data span already checked against the file. */
export interface GgufTensorInfo {
  name: string;
  /** ggml's order: dims[0] is the fastest-varying (a row's length); HF's shape is the reverse. */
  dims: number[];
  type: GgmlType;
  elements: number;
  /** Absolute byte offset of the tensor's data in the file, and its byte length. */
  offset: number;
  bytes: number;
}

export interface GgufHeader {
  version: number;
  metadata: Map<string, GgufValue>;
  tensors: GgufTensorInfo[];
  alignment: number;
  /** Absolute offset where the tensor data section starts. */
  dataStart: number;
  fileSize: number;
}

/** A value quoted in a message, bounded: a crafted file may hold megabytes in one string. */
export function brief(v: GgufValue | undefined): string {
  if (v === undefined) return 'absent';
  if (isGgufArray(v)) return `an array of ${v.items.length}`;
  const text = typeof v === 'string' ? JSON.stringify(v) : String(v);
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}
