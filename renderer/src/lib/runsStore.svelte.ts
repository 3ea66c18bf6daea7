/**
 * The run list, kept current by pushed events (DESIGN.md: the window is told, it does not poll): new runs and status
 * changes reload the list (coalesced), appended metrics update the row in place.
 */
import type { ApiEvent, ApiRunSummary } from '../../../engine/api/contract';
import { api } from '../api/connection.svelte';
import { messageOf } from '../api/errors';

class RunsStore {
  runs = $state<ApiRunSummary[]>([]);
  home = $state('');
  loaded = $state(false);
  error = $state<string | null>(null);
  #reloadTimer: ReturnType<typeof setTimeout> | null = null;

  async reload(): Promise<void> {
    if (!api) return;
    try {
      const answer = await api.listRuns();
      this.runs = answer.runs;
      this.home = answer.home;
      this.error = null;
    } catch (error) {
      this.error = messageOf(error);
    } finally {
      this.loaded = true;
    }
  }

  /** Many events can arrive at once (a run starting): one reload for the burst. */
  #reloadSoon(): void {
    if (this.#reloadTimer) return;
    this.#reloadTimer = setTimeout(() => {
      this.#reloadTimer = null;
      void this.reload();
    }, 150);
  }

  handle(event: ApiEvent): void {
    switch (event.type) {
      case 'host-ready':
      case 'runCreated':
      case 'runStatus':
      case 'runMeta':
      case 'runRemoved':
      case 'checkpointAdded':
      case 'checkpointRemoved':
      case 'fileReset':
        this.#reloadSoon();
        return;
      case 'metrics': {
        const row = this.runs.find((r) => r.id === event.runId);
        if (!row) return this.#reloadSoon();
        for (const point of event.points) {
          row.steps = point.step;
          for (const [name, value] of Object.entries(point)) {
            if (name === 'step' || name === 'time') continue;
            const stats = (row.metrics[name] ??= { last: null, min: null, max: null });
            stats.last = value;
            if (value !== null) {
              stats.min = stats.min === null ? value : Math.min(stats.min, value);
              stats.max = stats.max === null ? value : Math.max(stats.max, value);
            }
          }
        }
        return;
      }
      default:
        return;
    }
  }
}

export const runsStore = new RunsStore();

if (api) {
  api.onEvent((event) => runsStore.handle(event));
  void runsStore.reload();
}
