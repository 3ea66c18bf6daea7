/**
 * The host's methods for endpoint evaluations launched from the app (the Launch view's "Evaluate with endpoints";
 * contract.ts validateEndpointEval, startEndpointEval): the same run config schema as every launch, then
 * endpointEvalChecks.ts (every system or agent an endpoint, key variables that are names and are set, the user's files
 * inside the folders a window may name). A start runs the evaluation in a `run-worker` process (endpointEvalRun.ts)
 * through the host's launcher, like a training run: it answers with the run id once the run folder exists, the run
 * shows in Runs live, Stop cancels its requests in flight (stopRun: SIGTERM), and Resume replays the answered ones
 * (resumeRun: the worker sees the run is an evaluation).
 */
import { ConfigValidationError, type Checked, type RunConfig } from '../../runs/config/configSchema';
import type { ApiHandlers } from '../host/host';
import type { ApiParsedRequest } from '../contract/contract';
import { endpointEvalIssues } from './endpointEvalChecks';
import type { WorkerJob } from '../workers/runWorker';

export interface EndpointEvalHostOptions {
  home: string;
  /** The folders a window may name (hostGuards.ts allowedRoots). */
  roots: readonly string[];
  /** The host's validation of a launch request: preset, config and sets, through the run config schema. */
  resolveLaunch: (req: ApiParsedRequest<'validateConfig'>) => Checked<RunConfig>;
  /** The host's start of a worker process, resolved with the first stdout line `until` accepts. */
  launchWorker: <T>(job: WorkerJob, until: (line: Record<string, unknown>) => T | undefined) => Promise<T>;
  /** The environment the worker inherits (default: this process's). */
  env?: NodeJS.ProcessEnv;
}

type Methods = 'validateEndpointEval' | 'startEndpointEval';

export function createEndpointEvalHost(o: EndpointEvalHostOptions): { handlers: Pick<ApiHandlers, Methods> } {
  const checked = (req: ApiParsedRequest<'validateEndpointEval'>): Checked<RunConfig> => {
    const { fresh: _fresh, ...launch } = req;
    void _fresh;
    const c = o.resolveLaunch(launch);
    if (!c.success) return c;
    const issues = endpointEvalIssues(c.data, { env: o.env ?? process.env, roots: o.roots });
    return issues.length ? { success: false, issues } : c;
  };
  return {
    handlers: {
      async validateEndpointEval(req) {
        const c = checked(req);
        return c.success ? { ok: true, config: c.data } : { ok: false, issues: c.issues };
      },
      async startEndpointEval(req) {
        const c = checked(req);
        if (!c.success) throw new ConfigValidationError(c.issues, 'the endpoint evaluation');
        const job: WorkerJob = {
          kind: 'endpointEval',
          home: o.home,
          config: c.data,
          ...(req.preset ? { preset: req.preset } : {}),
          ...(req.fresh ? { fresh: true } : {}),
        };
        const runId = await o.launchWorker(job, (line) =>
          line.type === 'created' && typeof line.runId === 'string' ? line.runId : undefined,
        );
        return { runId };
      },
    },
  };
}
