/**
 * The names of the contract's methods and the IPC channels they travel on. No imports and no zod: the sandboxed preload
 * bundles this file (it cannot `require` packages), and contract.ts checks at compile time that it names exactly the
 * methods that have schemas.
 */
export const API_METHODS = [
  'ping',
  'listPresets',
  'configSchema',
  'validateConfig',
  'probeStepTime',
  'cancelStepProbe',
  'startRun',
  'stopRun',
  'resumeRun',
  'listRuns',
  'getRun',
  'getMetricSeries',
  'getRunsMetricSeries',
  'getTrajectories',
  'getLiveTrajectories',
  'setRunLabels',
  'evaluateCheckpoint',
  'compareCheckpoints',
  'rolloutSteps',
  'compareRollouts',
  'studyOptions',
  'startStudy',
  'listStudies',
  'attachStudy',
  'stopClusterJob',
  'getClusterLog',
  'validateEndpointEval',
  'startEndpointEval',
  'listModels',
  'modelCard',
  'addModel',
  'fetchModel',
  'chatStart',
  'chatStop',
  'labPrompts',
  'listCodeTrees',
  'getCodeTrees',
  'checkCodeTasks',
  'startCodeTree',
  'stopCodeTree',
] as const;

export type ApiMethod = (typeof API_METHODS)[number];

/** The keys `window.api` has: every method, plus the event subscription. */
export const API_KEYS = [...API_METHODS, 'onEvent'] as const;

/** Electron IPC channel of a method (`api:listRuns`); events come on API_EVENT_CHANNEL. */
export function apiChannel(method: ApiMethod): `api:${ApiMethod}` {
  return `api:${method}`;
}

export const API_EVENT_CHANNEL = 'api:event';

export function isApiMethod(name: unknown): name is ApiMethod {
  return typeof name === 'string' && (API_METHODS as readonly string[]).includes(name);
}
