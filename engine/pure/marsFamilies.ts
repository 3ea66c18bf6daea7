/**
 * The MARS question families, in the order the views list them: one list for the worlds (engine/mars/questions.ts),
 * the config schema (task.families) and the Episodes tab's finder. Here because the renderer may import engine/pure/.
 */
export const MARS_FAMILIES = [
  'direct',
  'paraphrase',
  'longTail',
  'bridge',
  'comparison',
  'threeHop',
  'compositional',
] as const;
