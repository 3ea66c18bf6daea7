/**
 * The run list, kept current by pushed events (docs/architecture.md: the window is told, it does not poll): new runs and status
 * changes reload the list (coalesced), appended metrics update the row in place. For running runs it also keeps the
 * recent seconds per step (getRunsMetricSeries on reload, then the pushed lines' times), for the table's ETA.
 */
import type { ApiEvent, ApiRunSummary } from '../../../engine/api/contract/contract';
import { api } from '../api/connection.svelte';
import { messageOf } from '../api/errors';

class RunsStore {
  /**
   * Not deeply reactive ($state.raw): a home of 1,000 runs is not wrapped in proxies; a row that changes is replaced by
   * a new object (see 'metrics' below), which is what the table's keyed rows react to.
   */
  runs = $state.raw<ApiRunSummary[]>([]);
  home = $state('');
  loaded = $state(false);
  error = $state<string | null>(null);
  /** Seconds per step of running runs, by id. */
  pace = $state<Record<string, number>>({});
  #lastPoint = new Map<string, { step: number; time: number }>();
  #reloadTimer: ReturnType<typeof setTimeout> | null = null;

  async reload(): Promise<void> {
    if (!api) return;
    try {
      const answer = await api.listRuns();
      this.runs = answer.runs;
      this.home = answer.home;
      this.error = null;
      void this.#loadPace(answer.runs.filter((r) => r.status === 'running').map((r) => r.id));
    } catch (error) {
      this.error = messageOf(error);
    } finally {
      this.loaded = true;
    }
  }

  async #loadPace(ids: string[]): Promise<void> {
    if (!api || ids.length === 0) return;
    try {
      const { runs } = await api.getRunsMetricSeries({ runIds: ids.slice(0, 50), names: [] });
      for (const r of runs) {
        if (r.secondsPerStep !== null) this.pace[r.runId] = r.secondsPerStep;
        if (r.lastStep !== null && r.lastTime !== null) {
          this.#lastPoint.set(r.runId, { step: r.lastStep, time: r.lastTime });
        }
      }
    } catch {
      // no ETA is shown; the list itself is fine
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
        const at = this.runs.findIndex((r) => r.id === event.runId);
        if (at < 0) return this.#reloadSoon();
        const was = this.runs[at]!;
        const row: ApiRunSummary = { ...was, metrics: { ...was.metrics } };
        for (const point of event.points) {
          const before = this.#lastPoint.get(event.runId);
          if (point.time !== null) {
            if (before && point.step === before.step + 1 && point.time >= before.time) {
              const dt = point.time - before.time;
              const old = this.pace[event.runId];
              this.pace[event.runId] = old === undefined ? dt : 0.8 * old + 0.2 * dt;
            }
            this.#lastPoint.set(event.runId, { step: point.step, time: point.time });
          }
          row.steps = point.step;
          for (const [name, value] of Object.entries(point)) {
            if (name === 'step' || name === 'time') continue;
            const stats = {
              ...(Object.hasOwn(row.metrics, name) ? row.metrics[name]! : { last: null, min: null, max: null }),
            };
            // defined, not assigned: a metric named "__proto__" stays a metric
            Object.defineProperty(row.metrics, name, {
              value: stats,
              writable: true,
              enumerable: true,
              configurable: true,
            });
            stats.last = value;
            if (value !== null) {
              stats.min = stats.min === null ? value : Math.min(stats.min, value);
              stats.max = stats.max === null ? value : Math.max(stats.max, value);
            }
          }
        }
        this.runs = this.runs.with(at, row);
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
