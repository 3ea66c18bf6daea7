/**
 * Packing one tool call's raw outputs into System 1 prompt windows (docs/algorithms.md §2.3), plus the §6.5 ablation
 * modes. Every bin is one System 1 call and one System 1 training sample.
 *
 * "Original order" is always ascending `index`, never the position in the input array, so a caller that reorders
 * its array gets the same bins.
 *
 * Inside a bin, items are listed in the order they were put in (§2.3 "insertion order" [D]). For FFD that is
 * non-increasing size with ties by index, since FFD places items in that order; for the ablation modes it is the
 * original order. Callers wanting tool order inside each bin can map the result through `inOriginalOrder`.
 */

export interface PackItem {
  /** Position in the tool's output list: defines "original order". */
  index: number;
  /** Tokens. */
  length: number;
}

export interface BinItem {
  index: number;
  /** Tokens kept: the full length, or fewer when head-truncated (the first `take` tokens are kept). */
  take: number;
}

export interface Bin {
  items: BinItem[];
  /** Σ (take + sepCost) over the bin's items; never exceeds C. */
  used: number;
}

export type PackingMode = 'ffd' | 'perDoc' | 'truncate';

function checkWhole(what: string, x: number): void {
  if (!Number.isInteger(x) || x < 0) throw new Error(`${what} must be a whole number ≥ 0, got ${x}.`);
}

/**
 * C = sys1PromptMax − len(sys1Template) − len(purpose) of §2.3. `purposeLen` must already be capped at purposeMax;
 * the result may be ≤ sepCost, which the packers reject with a message naming the config fields.
 */
export function sys1Capacity(sys1PromptMax: number, templateLen: number, purposeLen: number): number {
  checkWhole('sys1PromptMax', sys1PromptMax);
  checkWhole('System 1 template length', templateLen);
  checkWhole('purpose length', purposeLen);
  return sys1PromptMax - templateLen - purposeLen;
}

/**
 * Throws unless a bin of capacity C can hold at least one token of a document. Raised whatever the items, because it
 * is a configuration error and should surface on the first tool call, not only on the first non-empty one.
 */
export function assertUsableCapacity(C: number, sepCost: number): void {
  checkWhole('sepCost', sepCost);
  if (!Number.isInteger(C)) throw new Error(`System 1 capacity C must be a whole number, got ${C}.`);
  if (C <= sepCost) {
    throw new Error(
      `System 1 capacity C = sys1PromptMax − template length − purpose length is ${C}, which leaves no room for a ` +
        `document after its separator (sepCost = ${sepCost}). Raise sys1PromptMax or lower purposeMax.`,
    );
  }
}

/** Non-empty items in original order; validates them. */
function nonEmptyInOrder(items: readonly PackItem[]): PackItem[] {
  const seen = new Set<number>();
  for (const it of items) {
    checkWhole('PackItem.index', it.index);
    checkWhole(`PackItem ${it.index} length`, it.length);
    if (seen.has(it.index)) throw new Error(`PackItem index ${it.index} appears twice; indices must be distinct.`);
    seen.add(it.index);
  }
  // Empty outputs are dropped (§2.3 [D]): a lone separator would waste a System 1 call.
  return items.filter((it) => it.length > 0).sort((a, b) => a.index - b.index);
}

/**
 * First-Fit-Decreasing (§2.3): oversize items (ℓ + sepCost > C), in original order, each get their own bin holding
 * their first C − sepCost tokens; the rest, by size desc then index asc, go to the first bin (creation order) with
 * room, else a new bin.
 */
export function packFFD(items: readonly PackItem[], C: number, sepCost = 1): Bin[] {
  assertUsableCapacity(C, sepCost);
  const docs = nonEmptyInOrder(items);
  const bins: Bin[] = [];
  const rest: PackItem[] = [];
  for (const it of docs) {
    if (it.length + sepCost > C) bins.push({ items: [{ index: it.index, take: C - sepCost }], used: C });
    else rest.push(it);
  }
  // Sizes differ from lengths by a constant, so sorting by length sorts by size.
  rest.sort((a, b) => b.length - a.length || a.index - b.index);
  for (const it of rest) {
    const size = it.length + sepCost;
    const bin = bins.find((b) => b.used + size <= C);
    if (bin) {
      bin.items.push({ index: it.index, take: it.length });
      bin.used += size;
    } else {
      bins.push({ items: [{ index: it.index, take: it.length }], used: size });
    }
  }
  return bins;
}

/** Ablation `packing: 'perDoc'` (§6.5): one bin per non-empty document, in original order, each head-truncated to fit C. */
export function packPerDoc(items: readonly PackItem[], C: number, sepCost = 1): Bin[] {
  assertUsableCapacity(C, sepCost);
  return nonEmptyInOrder(items).map((it) => {
    const take = Math.min(it.length, C - sepCost);
    return { items: [{ index: it.index, take }], used: take + sepCost };
  });
}

/**
 * Ablation `packing: 'truncate'` (§6.5): the documents concatenated in original order (each followed by its
 * separator) and cut to one window of C. The document that crosses the limit is head-truncated; later ones are
 * dropped, as is a document for which only its separator would fit.
 */
export function packTruncate(items: readonly PackItem[], C: number, sepCost = 1): Bin[] {
  assertUsableCapacity(C, sepCost);
  const docs = nonEmptyInOrder(items);
  if (docs.length === 0) return [];
  const bin: Bin = { items: [], used: 0 };
  for (const it of docs) {
    const room = C - bin.used - sepCost;
    if (room <= 0) break;
    const take = Math.min(it.length, room);
    bin.items.push({ index: it.index, take });
    bin.used += take + sepCost;
  }
  return [bin];
}

/** Dispatches on the `packing` config key (§2.3, §6.5). */
export function packItems(mode: PackingMode, items: readonly PackItem[], C: number, sepCost = 1): Bin[] {
  switch (mode) {
    case 'ffd':
      return packFFD(items, C, sepCost);
    case 'perDoc':
      return packPerDoc(items, C, sepCost);
    case 'truncate':
      return packTruncate(items, C, sepCost);
    default: {
      const never: never = mode;
      throw new Error(`Unknown packing mode ${String(never)}; expected 'ffd', 'perDoc' or 'truncate'.`);
    }
  }
}

/** The same bins with each bin's items in original (tool) order instead of insertion order. */
export function inOriginalOrder(bins: readonly Bin[]): Bin[] {
  return bins.map((b) => ({ items: [...b.items].sort((x, y) => x.index - y.index), used: b.used }));
}
