/**
 * The Run page's tabs (views/RunView.svelte): charts for every run, and the inspectors of the algorithm's trajectory
 * records; their titles, which algorithm gets which, and the tab a chart point's "open this step" goes to. Plain data,
 * out of the view so the view stays one idea within its size.
 */

export const TAB_TITLES: Record<string, string> = {
  charts: 'Charts',
  episodes: 'Episodes',
  tree: 'Tree',
  diversity: 'Diversity',
  replies: 'Replies',
  codetrees: 'Trees',
};

const TABS_OF: Record<string, string[]> = {
  mars: ['charts', 'episodes'],
  // A run imported from verl (mars-lab import verl) holds mars.episode records: the episode inspector reads them.
  verl: ['charts', 'episodes'],
  marti: ['charts', 'tree', 'diversity'],
  seqgrpo: ['charts', 'replies'],
  chatgrpo: ['charts', 'replies'],
  // martipy's trees are of Python programs (code.tree records): the Code trees view's drawing, step by step.
  martipy: ['charts', 'codetrees'],
};

/** The tabs of a run of `algorithm` (unknown: charts only). */
export function tabsOf(algorithm: string | undefined): string[] {
  return TABS_OF[algorithm ?? ''] ?? ['charts'];
}

/** The tab that shows one step's trajectories (`?step=N`), if the run has one. */
export function stepTabOf(tabs: readonly string[]): string | undefined {
  return tabs.find((t) => t === 'episodes' || t === 'tree' || t === 'codetrees');
}
