/**
 * The contract between the host (Electron main, or the web server of `mars-lab serve`) and the window: every request and
 * its response, and the events the host pushes, as zod schemas (docs/architecture.md "The shape of the house": engine/api/).
 *
 * The host validates every request against these schemas before it acts, whichever transport carried it (IPC or the
 * web-mode socket). The renderer imports only *types* from here, so zod never reaches the page; the preload imports
 * only methods.ts. Keep this folder free of Node, DOM and Electron imports.
 *
 * This file is the contract's one entry: the schemas live by resource beside it (runs.ts, presets.ts,
 * trajectories.ts, evaluation.ts, studies.ts, events.ts, with common.ts for what they share) and are composed and
 * re-exported here, so the host, the transports, the windows and the tests import the contract from one place.
 *
 * Values that JSON cannot carry are normalised by the host before they leave it: a metric that was NaN or infinite is
 * sent as null (both transports then carry the same thing).
 */
import { z } from 'zod';
import { configIssueSchema, empty } from './common';
import { evaluationSchemas } from './evaluation';
import type { ApiEvent } from './events';
import { API_KEYS, API_METHODS, type ApiMethod } from './methods';
import { chatSchemas, modelSchemas } from './models';
import { codeTreeSchemas } from './codeTrees';
import { presetSchemas } from './presets';
import { runSchemas } from './runs';
import { stepProbeSchemas } from './stepProbe';
import { studySchemas } from './studies';
import { trajectorySchemas } from './trajectories';

export { API_EVENT_CHANNEL, API_KEYS, API_METHODS, apiChannel, isApiMethod, type ApiMethod } from './methods';
export { configIssueSchema, runIdSchema, type ApiConfigIssue } from './common';
export {
  metricPointSchema,
  runMetaSchema,
  runStatusSchema,
  runSummarySchema,
  type ApiMetricPoint,
  type ApiRunMeta,
  type ApiRunSummary,
  type ApiSeries,
  type RunStatus,
} from './runs';
export { type ApiMemoryPlan, type ApiPreset } from './presets';
export { stepProbeResultSchema, type ApiStepProbe } from './stepProbe';
export { type ApiModelCard, type ApiModelEntry } from './models';
export { type ApiCodeTreeFigures, type ApiCodeTreeOutput } from './codeTrees';
export { trajectoryFilterSchema, type ApiTrajectoryFilter } from './trajectories';
export { checkpointEvalSchema, type ApiCheckpointEval } from './evaluation';
export { STUDY_RUN_STATES, studyViewSchema, type ApiStudyView } from './studies';
export { apiEventSchema, type ApiEvent } from './events';

// ---- methods ---------------------------------------------------------------------------------------------------------

/**
 * Every method's request and response. Adding a method: add it to methods.ts and to its resource's schemas beside this
 * file, then implement it in the host's methods for that resource (engine/api/host/).
 */
export const apiSchemas = {
  /** The host's engine version and home folder; proves the bridge and the host are alive. */
  ping: {
    request: empty,
    response: z.object({ engineVersion: z.string(), home: z.string(), transport: z.enum(['electron', 'web']) }),
  },
  ...presetSchemas,
  ...stepProbeSchemas,
  ...runSchemas,
  ...trajectorySchemas,
  ...evaluationSchemas,
  ...studySchemas,
  ...modelSchemas,
  ...chatSchemas,
  ...codeTreeSchemas,
} as const satisfies Record<ApiMethod, { request: z.ZodType; response: z.ZodType }>;

export type ApiRequest<M extends ApiMethod> = z.input<(typeof apiSchemas)[M]['request']>;
export type ApiParsedRequest<M extends ApiMethod> = z.output<(typeof apiSchemas)[M]['request']>;
export type ApiResponse<M extends ApiMethod> = z.output<(typeof apiSchemas)[M]['response']>;

// ---- what window.api is --------------------------------------------------------------------------------------------

type MethodOf<M extends ApiMethod> =
  // Whether an empty request satisfies the method's request type (then the argument is optional): `{}` is that test.
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  {} extends ApiRequest<M>
    ? (request?: ApiRequest<M>) => Promise<ApiResponse<M>>
    : (request: ApiRequest<M>) => Promise<ApiResponse<M>>;

/**
 * What the page may call: one method per capability and one subscription, nothing generic (no channel names, no
 * ipcRenderer). A call rejects with an Error whose message says what was wrong (an invalid request names the field).
 */
export type MarsLabApi = { [M in ApiMethod]: MethodOf<M> } & {
  /** Subscribes to host events; returns the function that unsubscribes. */
  onEvent(listener: (event: ApiEvent) => void): () => void;
};

// Compile-time proof that API_KEYS and MarsLabApi name the same members.
type MissingFromKeys = Exclude<keyof MarsLabApi, (typeof API_KEYS)[number]>;
type UnknownInKeys = Exclude<(typeof API_KEYS)[number], keyof MarsLabApi>;
const keysMatchContract: [MissingFromKeys, UnknownInKeys] extends [never, never] ? true : false = true;
void keysMatchContract;
void API_METHODS;

/** The error a rejected call carries across a transport: a message, and for configs the issues by field path. */
export const apiErrorSchema = z.object({ message: z.string(), issues: z.array(configIssueSchema).optional() });
export type ApiErrorPayload = z.infer<typeof apiErrorSchema>;
