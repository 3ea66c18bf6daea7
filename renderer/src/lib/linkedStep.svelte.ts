/**
 * A Run page trajectory tab's feed (Episodes, Tree) tied to the host and to the address: the feed takes the host's
 * events, and the step the address asks for (`#/run/<id>/<tab>?step=N`, e.g. from a chart point or the finder's "open
 * step") is what it loads; without one it loads the newest records. Opening a step or going back to the newest goes
 * through the address, so the back button and a shared link find the same view. Both tabs did this in their own copy.
 *
 * Call it while a component initialises (its effects belong to that component).
 */
import { untrack } from 'svelte';
import { api } from '../api/connection.svelte';
import { go, route } from './router.svelte';
import type { TrajectoryFeed } from './trajectoryFeed.svelte';

export interface LinkedStep {
  /** Opens one step's records: through the address, or reloads it when the address already names it. */
  openStep: (step: number) => void;
  /** Back to the newest records: through the address, or reloads them when the address names no step. */
  showNewest: () => void;
}

/** Links `feed` to the host's events and to `?step=N` of the tab whose address is `tab()` (e.g. ['run', id, 'tree']). */
export function linkStep<T>(feed: TrajectoryFeed<T>, tab: () => string[]): LinkedStep {
  /** The step the address asks for (?step=N), if any. */
  const linkedStep = $derived.by(() => {
    const v = route.query['step'];
    const n = v === undefined || v === '' ? NaN : Number(v);
    return Number.isInteger(n) && n >= 0 ? n : null;
  });

  $effect(() => {
    if (!api) return;
    return api.onEvent((event) => feed.onEvent(event));
  });
  $effect(() => {
    if (!api) return;
    const step = linkedStep;
    untrack(() => void (step === null ? feed.load() : feed.openStep(step)));
  });

  return {
    openStep: (step) => (linkedStep === step ? void feed.openStep(step) : go(tab(), { step: String(step) })),
    showNewest: () => (linkedStep === null ? void feed.showNewest() : go(tab())),
  };
}
