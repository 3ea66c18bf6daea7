/**
 * The events of the contract (contract.ts re-exports them): what the host pushes to every window.
 */
import { z } from 'zod';
import { metricPointSchema, runMetaSchema, runStatusSchema } from './runs';
import { studyViewSchema } from './studies';

/**
 * What the host pushes: 'host-ready', the home watcher's RunEvent union (engine/runs/watch/watcher.ts; host.ts checks at
 * compile time that every RunEvent fits here), and notices about the run processes this host started.
 */
export const apiEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('host-ready'), engineVersion: z.string() }),
  z.object({ type: z.literal('runCreated'), runId: z.string(), meta: runMetaSchema }),
  z.object({ type: z.literal('runStatus'), runId: z.string(), status: runStatusSchema, meta: runMetaSchema }),
  z.object({ type: z.literal('runMeta'), runId: z.string(), meta: runMetaSchema }),
  z.object({ type: z.literal('runRemoved'), runId: z.string() }),
  z.object({ type: z.literal('metrics'), runId: z.string(), points: z.array(metricPointSchema) }),
  z.object({ type: z.literal('trajectories'), runId: z.string(), records: z.array(z.unknown()) }),
  /** live.json changed (the whole of it), or was removed when its step's records were written (step null). */
  z.object({
    type: z.literal('liveTrajectories'),
    runId: z.string(),
    step: z.number().nullable(),
    records: z.array(z.unknown()),
  }),
  z.object({ type: z.literal('event'), runId: z.string(), record: z.record(z.string(), z.unknown()) }),
  z.object({ type: z.literal('checkpointAdded'), runId: z.string(), step: z.number(), path: z.string() }),
  z.object({ type: z.literal('checkpointRemoved'), runId: z.string(), step: z.number() }),
  z.object({
    type: z.literal('fileReset'),
    runId: z.string(),
    file: z.enum(['metrics.jsonl', 'trajectories.jsonl', 'events.jsonl']),
  }),
  z.object({ type: z.literal('warning'), runId: z.string().optional(), message: z.string() }),
  /** A process this host started for a run (training, resume) ended; `error` holds the end of its stderr on failure. */
  /** A study's record or link changed (a run submitted, progressed, ended; the cluster became unreachable). */
  z.object({ type: z.literal('studyChanged'), study: studyViewSchema }),
  /**
   * startStudy with ray.ship, before it answers: packing the project (or taking it from the cache), uploading it (or
   * finding it on the cluster), shipped. `message` is one line for the launch form.
   */
  z.object({
    type: z.literal('shipProgress'),
    phase: z.enum(['packing', 'uploading', 'shipped']),
    message: z.string(),
  }),
  /** probeStepTime's progress, for the window that named the probe: its phase and one line for the launch form. */
  z.object({
    type: z.literal('stepProbeProgress'),
    probeId: z.string(),
    phase: z.enum(['starting', 'loading', 'sampling', 'update', 'done']),
    message: z.string(),
  }),
  /** New text of a cluster job's log, as followed over the Jobs API's WebSocket: bytes `from`..`to` of the kept log. */
  z.object({
    type: z.literal('clusterLog'),
    studyId: z.string(),
    runId: z.string(),
    from: z.number(),
    to: z.number(),
    text: z.string(),
  }),
  /** fetchModel's progress: bytes so far of the download's total (null when the index did not say), or its end. */
  z.object({
    type: z.literal('modelFetch'),
    name: z.string(),
    phase: z.enum(['downloading', 'verifying', 'done', 'failed']),
    received: z.number(),
    total: z.number().nullable(),
    message: z.string(),
  }),
  /** The chat playground: a reply's next text (as the model's server streamed it), then its end. */
  z.object({ type: z.literal('chatDelta'), chatId: z.string(), text: z.string(), tokens: z.number() }),
  z.object({
    type: z.literal('chatEnd'),
    chatId: z.string(),
    finish: z.enum(['stop', 'length', 'stopped', 'error']),
    /** Tokens of the reply, and per second from the first token on (the model's loading and the prompt excluded). */
    tokens: z.number(),
    seconds: z.number(),
    tokensPerSecond: z.number().nullable(),
    /** One line: why it failed (finish 'error'), or what is happening (loading the model). */
    message: z.string(),
  }),
  z.object({
    type: z.literal('runProcessExit'),
    runId: z.string(),
    code: z.number().nullable(),
    error: z.string().optional(),
  }),
]);
export type ApiEvent = z.infer<typeof apiEventSchema>;
