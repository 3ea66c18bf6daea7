/**
 * The host's time probe (issue 33, item 3): the Launch form's "Measure time per step". The launch is validated as
 * validateConfig validates it (launchResolve.ts, with its path guards), then `mars-lab probe --config-json … --json`
 * measures it in a worker process within the host's slots (the host never computes: docs/architecture.md
 * "Processes"); its progress lines become stepProbeProgress events and its last line, checked by the contract's
 * schema, is the answer. A probe ends by itself (engine/runs/probe/stepTimeProbe.ts bounds its work), is cancelled by
 * its id, and is ended after PROBE_LIMIT_MS whatever it is doing.
 */
import { UserError } from '../../base/userError';
import { stepProbeResultSchema, type ApiParsedRequest, type ApiResponse } from '../contract/contract';
import type { RunLauncher, RunProcess } from '../workers/runLauncher';
import type { ApiHandlers } from './host';
import type { HostContext } from './hostContext';
import type { WorkerSlots } from './hostGuards';
import { isRecord } from './jsonValues';
import { withoutJsonQuotes } from '../../base/boundedText';

/** A probe still working after this is ended (SmolLM2-135M's takes 20 to 40 s on 2 busy cores). */
export const PROBE_LIMIT_MS = 5 * 60 * 1000;
const PHASES = new Set(['loading', 'sampling', 'update', 'done']);

interface Probing {
  proc: RunProcess;
  why?: string;
}

export function createStepProbeMethods(
  ctx: HostContext,
  launcher: RunLauncher,
  slots: WorkerSlots,
): { handlers: Pick<ApiHandlers, 'probeStepTime' | 'cancelStepProbe'>; close(): void } {
  const probes = new Map<string, Probing>();

  function probeStepTime(req: ApiParsedRequest<'probeStepTime'>): Promise<ApiResponse<'probeStepTime'>> {
    const { probeId, ...launch } = req;
    if (probes.has(probeId)) throw new UserError(`probe ${probeId} is already measuring; cancel it or wait`);
    const checked = ctx.resolveLaunch(launch);
    if (!checked.success) {
      throw new UserError(
        `the settings have problems: ${checked.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
      );
    }
    const release = slots.take('measure a step’s time');
    const args = [
      'probe',
      '--config-json',
      JSON.stringify(checked.data),
      '--json',
      '--worker-slots',
      String(slots.max),
    ];
    const say = (phase: 'starting' | 'loading' | 'sampling' | 'update' | 'done', message: string): void =>
      ctx.broadcast({ type: 'stepProbeProgress', probeId, phase, message });
    return new Promise((resolve, reject) => {
      let answer: ApiResponse<'probeStepTime'> | undefined;
      let stderr = '';
      const entry: Probing = { proc: undefined as unknown as RunProcess };
      const timer = setTimeout(() => {
        entry.why = `probe: still measuring after ${PROBE_LIMIT_MS / 60_000} minutes; ended`;
        entry.proc.terminate();
      }, PROBE_LIMIT_MS);
      try {
        entry.proc = launcher.launch(args, {
          onStdoutLine(line) {
            let parsed: unknown;
            try {
              parsed = JSON.parse(line);
            } catch {
              return; // a library's notice
            }
            if (!isRecord(parsed)) return;
            if (parsed.type === 'progress' && typeof parsed.message === 'string' && PHASES.has(String(parsed.phase))) {
              say(parsed.phase as 'loading', parsed.message.slice(0, 300));
            } else if (parsed.type === 'probe') {
              const result = stepProbeResultSchema.safeParse(parsed.result);
              if (result.success) answer = { result: result.data };
              else entry.why = `the probe's answer does not fit the contract: ${result.error.issues[0]?.message}`;
            }
          },
          onStderr(text) {
            stderr = (stderr + text).slice(-4000);
          },
          onExit(code) {
            release();
            clearTimeout(timer);
            probes.delete(probeId);
            if (code === 0 && answer) return resolve(answer);
            const last = withoutJsonQuotes(stderr.trim()).split('\n').slice(-3).join('\n');
            reject(new UserError(entry.why ?? (last || `the probe ended with code ${code ?? 'a signal'}`)));
          },
        });
      } catch (err) {
        release();
        clearTimeout(timer);
        return reject(err instanceof Error ? err : new Error(String(err)));
      }
      probes.set(probeId, entry);
      say('starting', 'starting a worker to measure');
    });
  }

  return {
    handlers: {
      probeStepTime,
      async cancelStepProbe({ probeId }) {
        const entry = probes.get(probeId);
        if (!entry) return { cancelled: false };
        entry.why = 'probe: cancelled';
        entry.proc.terminate();
        return { cancelled: true };
      },
    },
    close(): void {
      for (const p of probes.values()) p.proc.terminate();
    },
  };
}
