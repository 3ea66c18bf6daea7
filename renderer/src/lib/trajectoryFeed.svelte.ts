/**
 * A window onto a run's trajectories.jsonl for the inspectors: the newest `pageSize` lines first, older pages on
 * request, and new lines as the run appends them. A pushed 'trajectories' event only says that lines arrived; the feed
 * then asks for the lines after the last one it holds, by position, so nothing is counted twice (a line can be read
 * by a page request and pushed by the watcher at the same time) and nothing is missed.
 *
 * With `live`, the feed also holds the records of the step in flight (live.json: MARTI's trees as they grow), pushed
 * whole by 'liveTrajectories' events. They are not final: the view lays them over `records`, where the step's final
 * records replace them as they arrive. When the step ends, the live records are dropped only after the lines written
 * before that end have been fetched, so a growing tree is never replaced by nothing.
 *
 * Besides the newest lines (mode 'newest', followed live), the feed opens one step directly (mode 'step': the host
 * indexes the file by step, engine/runs/trajectories/trajectoryIndex.ts) or the lines a search keeps (mode 'search', newest first,
 * older matches on request). Neither follows the run: new lines only raise `newerLines`, and `showNewest()` returns.
 * With each answer come the texts of the pages MARS episodes found (`pages`), which the episode view shows.
 */
import type { ApiEvent, ApiResponse, ApiTrajectoryFilter } from '../../../engine/api/contract/contract';
import { api } from '../api/connection.svelte';
import { messageOf } from '../api/errors';

export class TrajectoryFeed<T> {
  /** The records of the loaded lines that pass the guard, oldest first. */
  records = $state.raw<T[]>([]);
  /** Lines in the file (as of the last answer). */
  total = $state(0);
  /** Position of the first loaded line (0 = everything from the start is loaded). */
  from = $state(0);
  loading = $state(true);
  error = $state<string | null>(null);
  /** Lines that were not JSON or not of this kind, among those loaded. */
  skipped = $state(0);
  /** The records of the step in flight (only with `live`), as the last report had them. */
  live = $state.raw<T[]>([]);
  /** The step in flight, null between steps. */
  liveStep = $state<number | null>(null);
  /** What the records are: the newest lines (followed), one step's lines, or a search's matches. */
  mode = $state<'newest' | 'step' | 'search'>('newest');
  /** The step opened in mode 'step' (the first step at or after the one asked for); null when there was none. */
  openedStep = $state<number | null>(null);
  /** The steps the file holds. */
  steps = $state<{ first: number | null; last: number | null; count: number } | null>(null);
  /** The search of mode 'search', and where its older matches continue (null: none left). */
  filter = $state.raw<ApiTrajectoryFilter | null>(null);
  next = $state<number | null>(null);
  /** Lines the searches looked at so far. */
  scanned = $state(0);
  /** Lines the run appended since a step or a search was opened (they are not shown until showNewest). */
  newerLines = $state(0);
  /** The text of pages the loaded MARS episodes found, by `w<seed>:<page id>` (engine/runs/trajectories/trajectoryPages.ts). */
  pages = $state.raw<Record<string, { title: string; text: string }>>({});

  /** One past the last loaded line. */
  private end = 0;
  private chain: Promise<void> = Promise.resolve();
  /** Counts live reports, so a drop queued behind a fetch does not drop a newer report that came meanwhile. */
  private liveReports = 0;

  constructor(
    private readonly runId: string,
    private readonly guard: (record: unknown) => record is T,
    private readonly pageSize = 200,
    /** Most records kept while following a long run; the oldest go first. */
    private readonly keep = 3000,
    /** Follow the step in flight too (live.json). */
    private readonly followLive = false,
  ) {}

  private queue(work: () => Promise<void>): Promise<void> {
    this.chain = this.chain.then(work).catch((error: unknown) => {
      this.error = messageOf(error);
    });
    return this.chain;
  }

  private take(answer: ApiResponse<'getTrajectories'>, reset: boolean): void {
    if (answer.steps) this.steps = answer.steps;
    if (reset) this.pages = answer.pages ?? {};
    else if (answer.pages) this.pages = { ...this.pages, ...answer.pages };
  }

  private split(records: unknown[]): T[] {
    const good = records.filter(this.guard);
    this.skipped += records.length - good.length;
    return good;
  }

  /** (Re)loads the newest page. */
  load(): Promise<void> {
    return this.queue(async () => {
      this.loading = true;
      try {
        const head = await api!.getTrajectories({ runId: this.runId, offset: 0, limit: 1 });
        const from = Math.max(0, head.total - this.pageSize);
        const page = await api!.getTrajectories({ runId: this.runId, offset: from, limit: this.pageSize });
        this.mode = 'newest';
        this.openedStep = null;
        this.filter = null;
        this.next = null;
        this.newerLines = 0;
        this.take(page, true);
        this.skipped = 0;
        this.records = this.split(page.records);
        this.from = from;
        this.end = from + page.records.length;
        this.total = page.total;
        this.error = null;
        if (this.followLive) {
          const seen = this.liveReports;
          const live = await api!.getLiveTrajectories({ runId: this.runId });
          // a pushed report that arrived during the request is newer than this answer
          if (seen === this.liveReports) this.setLive(live.step, live.records);
        }
      } finally {
        this.loading = false;
      }
    });
  }

  private setLive(step: number | null, records: unknown[]): void {
    this.liveStep = step;
    this.live = records.filter(this.guard);
  }

  /** A report of the step in flight; step null: the step ended (its final records are in the file by now). */
  private onLive(step: number | null, records: unknown[]): void {
    const report = ++this.liveReports;
    if (step !== null) {
      this.setLive(step, records);
      return;
    }
    void this.tail();
    void this.queue(async () => {
      if (report === this.liveReports) this.setLive(null, []);
    });
  }

  /** Reads again what is shown (after a reconnection, or a resume cut the file): the step, the search, or the newest. */
  reload(): Promise<void> {
    if (this.mode === 'step' && this.openedStep !== null) return this.openStep(this.openedStep);
    if (this.mode === 'search' && this.filter) return this.search(this.filter);
    return this.load();
  }

  /** Back to the newest lines, followed live. */
  showNewest(): Promise<void> {
    return this.load();
  }

  /** Opens one step (or the first after it that has lines): all its lines, whatever their number, and nothing else. */
  openStep(step: number): Promise<void> {
    return this.queue(async () => {
      this.loading = true;
      try {
        const first = await api!.getTrajectories({ runId: this.runId, step, limit: 500 });
        const records = [...first.records];
        this.take(first, true);
        const stepEnd = first.stepEnd ?? first.offset + records.length;
        // a step of more than 500 lines comes in pages, up to what the feed keeps
        while (first.step !== null && first.offset + records.length < stepEnd && records.length < this.keep) {
          const more = await api!.getTrajectories({
            runId: this.runId,
            offset: first.offset + records.length,
            limit: 500,
          });
          if (more.records.length === 0) break;
          records.push(...more.records);
          this.take(more, false);
        }
        this.skipped = 0;
        this.records = this.split(records);
        this.mode = 'step';
        this.openedStep = first.step ?? null;
        this.filter = null;
        this.next = null;
        this.newerLines = 0;
        this.from = first.offset;
        this.end = first.offset + records.length;
        this.total = first.total;
        this.error = null;
      } finally {
        this.loading = false;
      }
    });
  }

  /** The newest lines that pass `filter` (a page of them; `searchOlder` continues). */
  search(filter: ApiTrajectoryFilter): Promise<void> {
    return this.queue(async () => {
      this.loading = true;
      try {
        const answer = await api!.getTrajectories({ runId: this.runId, filter, limit: this.pageSize });
        this.take(answer, true);
        this.skipped = 0;
        this.records = this.split(answer.records);
        this.mode = 'search';
        this.openedStep = null;
        this.filter = filter;
        this.next = answer.next ?? null;
        this.scanned = answer.scanned ?? 0;
        this.newerLines = 0;
        this.total = answer.total;
        this.from = 0;
        this.end = answer.total;
        this.error = null;
      } finally {
        this.loading = false;
      }
    });
  }

  /** Whether the search has older matches to fetch, within what the feed keeps (the window's memory stays bounded). */
  get canSearchOlder(): boolean {
    return this.mode === 'search' && this.next !== null && this.records.length < this.keep;
  }

  /** More matches of the search, older than those shown. */
  searchOlder(): Promise<void> {
    return this.queue(async () => {
      const before = this.next;
      if (!this.canSearchOlder || this.filter === null || before === null) return;
      const answer = await api!.getTrajectories({
        runId: this.runId,
        filter: this.filter,
        limit: this.pageSize,
        before,
      });
      this.take(answer, false);
      this.records = [...this.split(answer.records), ...this.records];
      this.next = answer.next ?? null;
      this.scanned += answer.scanned ?? 0;
    });
  }

  /** Loads the page before the first loaded line. */
  older(): Promise<void> {
    return this.queue(async () => {
      if (this.from === 0) return;
      const from = Math.max(0, this.from - this.pageSize);
      const page = await api!.getTrajectories({ runId: this.runId, offset: from, limit: this.from - from });
      this.take(page, false);
      this.records = [...this.split(page.records), ...this.records];
      this.from = from;
      this.total = page.total;
    });
  }

  /** Fetches the lines after the last loaded one (all of them, page by page). */
  private tail(): Promise<void> {
    return this.queue(async () => {
      if (this.mode !== 'newest') {
        // a step or a search is being read: say that more arrived, change nothing
        const head = await api!.getTrajectories({ runId: this.runId, offset: 0, limit: 1 });
        if (head.steps) this.steps = head.steps;
        this.newerLines += Math.max(0, head.total - this.total);
        this.total = head.total;
        return;
      }
      for (;;) {
        const page = await api!.getTrajectories({ runId: this.runId, offset: this.end, limit: 500 });
        this.total = page.total;
        this.take(page, false);
        if (page.records.length === 0) return;
        this.end += page.records.length;
        let next = [...this.records, ...this.split(page.records)];
        if (next.length > this.keep) {
          this.from += next.length - this.keep;
          next = next.slice(next.length - this.keep);
        }
        this.records = next;
        if (this.end >= page.total) return;
      }
    });
  }

  /** Feed it the host's events (subscribe in the view, which owns the subscription). */
  onEvent(event: ApiEvent): void {
    if (event.type === 'host-ready') void this.reload();
    else if (event.type === 'trajectories' && event.runId === this.runId) void this.tail();
    else if (event.type === 'fileReset' && event.runId === this.runId && event.file === 'trajectories.jsonl') {
      void this.reload();
    } else if (event.type === 'liveTrajectories' && event.runId === this.runId && this.followLive) {
      this.onLive(event.step, event.records);
    }
  }
}
