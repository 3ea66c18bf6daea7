/**
 * When and how finely the vocabulary head runs in row chunks (model/chunkedHead.ts), as plain arithmetic: the
 * training path uses it to cut the head, and the memory estimate (rl/passSize.ts, loaded in the app's main process,
 * where TensorFlow.js is not) to count what the head holds in one pass.
 */

/** Logits of a whole batch above this many floats (64 MiB) are computed in row chunks. */
export const CHUNK_ABOVE_FLOATS = 2 ** 24;
/** Floats of logits per chunk by default (16 MiB): ⌊2^22 / V⌋ rows, 85 at V = 49,152. */
export const CHUNK_FLOATS = 2 ** 22;
/**
 * Bytes the chunked head holds beyond the weights' own gradients, whatever the rows: one chunk's logits, their
 * log-softmax and softmax and the logits' gradient (four float32 buffers of CHUNK_FLOATS). A trained head's weight
 * gradient (and its running sum over chunks) is counted with the weights' copies by the memory estimate.
 */
export const CHUNKED_HEAD_BYTES = 4 * 4 * CHUNK_FLOATS;

/**
 * Rows per chunk for M rows over a vocabulary of V: M (one chunk: the plain head) unless M·V > CHUNK_ABOVE_FLOATS, then
 * ⌊CHUNK_FLOATS / V⌋. `chunkRows`, when given, forces chunks of that many rows (Infinity: never chunked).
 */
export function headChunkRows(m: number, v: number, chunkRows?: number): number {
  if (chunkRows !== undefined) {
    if (!(chunkRows >= 1)) throw new Error(`headChunkRows: ${chunkRows} rows per chunk; at least 1`);
    return Math.min(m, Math.floor(chunkRows));
  }
  return m * v > CHUNK_ABOVE_FLOATS ? Math.max(1, Math.min(m, Math.floor(CHUNK_FLOATS / v))) : m;
}
