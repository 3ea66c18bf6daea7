/**
 * How a large read goes out: consecutive batches of at most EVENT_BATCH_BYTES of JSON each, so a run copied into the
 * home with its whole backlog is many bounded events rather than one event the size of its log (watcher.ts).
 */

/** The most JSON one metrics or trajectories event carries, unless a single record is larger on its own. */
export const EVENT_BATCH_BYTES = 1 << 20;

/**
 * Consecutive runs of `items`, each at most EVENT_BATCH_BYTES of JSON (a larger single item alone). `readBytes` is
 * what the items were read from: a read that small is one batch without measuring anything.
 */
export function batchBySize<T>(items: T[], readBytes: number, limit = EVENT_BATCH_BYTES): T[][] {
  if (readBytes <= limit) return [items];
  const batches: T[][] = [];
  let batch: T[] = [];
  let bytes = 2; // the array's brackets
  for (const item of items) {
    const size = Buffer.byteLength(JSON.stringify(item) ?? 'null') + 1;
    if (batch.length > 0 && bytes + size > limit) {
      batches.push(batch);
      batch = [];
      bytes = 2;
    }
    batch.push(item);
    bytes += size;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}
