/** MARTI-MARS² search (docs/algorithms.md §3.4–§3.6, §3.9, §3.10): posteriors, AB-MCTS-A trees, tree metrics. */
export * from './posterior';
export * from './abmcts';
export * from './metrics';
