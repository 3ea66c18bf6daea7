/**
 * The check both tokenizers make before they decode or name an id: a whole number inside the vocabulary, else a
 * RangeError that names the tokenizer's source and says the model and tokenizer must agree on the vocabulary size.
 */

/** Throws a RangeError unless `id` is an integer in [0, vocabSize). */
export function checkTokenId(id: number, vocabSize: number, source: string): void {
  if (!Number.isInteger(id) || id < 0 || id >= vocabSize) {
    throw new RangeError(
      `Token id ${id} is outside the vocabulary of ${source} (ids 0–${vocabSize - 1}); the model's vocabulary size must match the tokenizer's`,
    );
  }
}
