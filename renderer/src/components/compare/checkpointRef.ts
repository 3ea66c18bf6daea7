/**
 * A checkpoint as Compare's address names it, `<runId>@<step>` (#/compare?a=…&b=…): the view, its picker and its item
 * view all read and label the two sides with these, so they live once here.
 */

/** One side of a checkpoint comparison: a run and one of its checkpoints' steps (null until one is chosen). */
export interface CheckpointRef {
  runId: string;
  step: number | null;
}

/** `<runId>@<step>` as a run and a step; anything else is a run id with no step yet. */
export const parseRef = (text: string | undefined): CheckpointRef => {
  const m = /^(.+)@(\d+)$/.exec(text ?? '');
  return m ? { runId: m[1]!, step: Number(m[2]) } : { runId: text ?? '', step: null };
};

/** How the result and the item view name a side. */
export const refLabel = (ref: CheckpointRef): string => `${ref.runId} @ step ${ref.step ?? '?'}`;
