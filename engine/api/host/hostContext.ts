/**
 * What the host's methods share (host.ts builds it once per host and hands it to each resource's methods): the home
 * and its run index, the run processes this host started, the folders a window may name, the events to every window,
 * and the few steps several resources take (a run's folder, its trajectory lines, a launch's config, a worker).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Checked, RunConfig } from '../../runs/config/configSchema';
import { RUN_FILES, runDir, runsDir } from '../../runs/folder/home';
import { insideReal } from '../../runs/folder/homeFile';
import type { RunIndex } from '../../runs/summary/runIndex';
import type { TrajectoryIndex } from '../../runs/trajectories/trajectoryIndex';
import { UserError } from '../../base/userError';
import type { ApiEvent, ApiParsedRequest } from '../contract/contract';
import type { Launched, LaunchWorker } from './workerLaunch';

export interface HostContext {
  readonly home: string;
  readonly presetsDir: string;
  readonly transport: 'electron' | 'web';
  /** The run list and each run's summary, kept up to date incrementally (engine/runs/summary/runIndex.ts). */
  readonly index: RunIndex;
  /** Run processes this host started, by run id, while they live. */
  readonly running: Map<string, Launched>;
  /** Roots a window may name files in (hostGuards.ts allowedRoots). */
  readonly roots: readonly string[];
  /** To every window. */
  readonly broadcast: (event: ApiEvent) => void;
  /** A run's folder; a UserError when the home has no such run. */
  readonly dirOf: (runId: string) => string;
  /** A run's trajectories.jsonl index, up to date (trajectoryLines.ts). */
  readonly trajectoryLines: (runId: string) => TrajectoryIndex;
  /** The config a launch request describes, validated; never throws for a user's mistake (launchResolve.ts). */
  readonly resolveLaunch: (req: ApiParsedRequest<'validateConfig'>) => Checked<RunConfig>;
  /** Starts a worker process within the slots (workerLaunch.ts). */
  readonly launchWorker: LaunchWorker;
}

/**
 * A run's folder in this home, which must hold its run.json, and which must lie inside the home's runs/ once symbolic
 * links are resolved: a home is untrusted (runs are copied in, come back by tar), and a linked run folder would let a
 * window read and write (labels.json) a folder elsewhere.
 */
export function runDirOf(home: string): (runId: string) => string {
  return (runId) => {
    const dir = runDir(home, runId);
    if (!fs.existsSync(path.join(dir, RUN_FILES.meta))) {
      throw new UserError(`no run '${runId}' in ${path.dirname(dir)}`);
    }
    if (!insideReal(runsDir(home), dir)) {
      throw new UserError(
        `run '${runId}': its folder ${dir} is a symbolic link that leads outside ${runsDir(home)}; the host reads ` +
          'only run folders inside the home: move the run in instead of linking it',
      );
    }
    return dir;
  };
}
