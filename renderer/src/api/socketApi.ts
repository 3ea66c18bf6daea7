/**
 * `window.api` for web mode (`mars-lab serve`): the same contract as Electron's preload, over the server's WebSocket.
 * The token (connection.svelte.ts takes it from the URL the server printed) is the socket's first message, never part
 * of its URL. The socket reconnects after a drop; each connection starts with a 'host-ready' event once the token is
 * accepted, so views reload what they show. A server that refuses the token (it restarted with a new one) closes with
 * TOKEN_REFUSED: the state becomes 'refused' and the page stops retrying.
 */
import type { ApiEvent, ApiMethod, ApiRequest, ApiResponse, MarsLabApi } from '../../../engine/api/contract/contract';
import { ApiCallError } from './errors';

export type ConnectionState = 'connecting' | 'open' | 'closed' | 'refused';

/** engine/api/web/webServer.ts TOKEN_REFUSED (not imported: that module is Node's). */
const TOKEN_REFUSED = 4401;

/** One message from the server: a pushed event, or the answer to call `id`. */
interface ServerMessage {
  event?: ApiEvent;
  id?: number;
  ok?: boolean;
  result?: unknown;
  error?: { message: string; issues?: { path: string; message: string }[] };
}

/**
 * A socket message read as a ServerMessage, or null where it is not JSON or not an object. The server is the one that
 * checked this page's token, and builds its messages from the same contract (engine/api/web/webServer.ts); the page checks
 * their shape, not every field's content (zod stays out of the page's bundle).
 */
function readMessage(text: string): ServerMessage | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? parsed : null;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export function createSocketApi(token: string, onState: (state: ConnectionState) => void): MarsLabApi {
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api`;
  const pending = new Map<number, Pending>();
  const listeners = new Set<(event: ApiEvent) => void>();
  let queue: string[] = [];
  let nextId = 1;
  let socket: WebSocket;
  let retryMs = 500;
  /** Set once the server refused the token: every later call fails with it at once. */
  let refusedWith: string | null = null;

  const connect = (): void => {
    onState('connecting');
    socket = new WebSocket(url);
    socket.onopen = () => {
      // The token first: the server handles a socket's messages in order, so the queued calls may follow at once.
      socket.send(JSON.stringify({ token }));
      for (const message of queue) socket.send(message);
      queue = [];
    };
    socket.onmessage = (message) => {
      const data = readMessage(String(message.data));
      if (!data) return;
      if (data.event) {
        if (data.event.type === 'host-ready') {
          retryMs = 500;
          onState('open');
        }
        for (const listener of listeners) listener(data.event);
        return;
      }
      const call = typeof data.id === 'number' ? pending.get(data.id) : undefined;
      if (!call) return;
      pending.delete(data.id!);
      if (data.ok) call.resolve(data.result);
      else call.reject(new ApiCallError(data.error?.message ?? 'the server refused the request', data.error?.issues));
    };
    socket.onclose = (event) => {
      const refused = event.code === TOKEN_REFUSED;
      onState(refused ? 'refused' : 'closed');
      const why = refused
        ? "the mars-lab server refused this page's token (it was restarted, or the URL was mistyped): open the URL that `mars-lab serve` printed"
        : 'the connection to the mars-lab server was lost';
      for (const call of pending.values()) call.reject(new ApiCallError(why));
      pending.clear();
      // Retrying with a token the server refused gets nowhere: the page says so and waits for the new URL.
      if (refused) {
        refusedWith = why;
        return;
      }
      // Reconnect after a drop; a server restarted meanwhile has a new token, refuses this one, and the page says so.
      setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, 10_000);
    };
  };
  connect();

  const call =
    <M extends ApiMethod>(method: M) =>
    (request?: ApiRequest<M>): Promise<ApiResponse<M>> =>
      new Promise<ApiResponse<M>>((resolve, reject) => {
        if (refusedWith !== null) return reject(new ApiCallError(refusedWith));
        const id = nextId++;
        pending.set(id, { resolve: resolve, reject });
        const text = JSON.stringify({ id, method, params: request ?? {} });
        if (socket.readyState === WebSocket.OPEN) socket.send(text);
        else queue.push(text);
      });

  return {
    ping: call('ping'),
    listPresets: call('listPresets'),
    configSchema: call('configSchema'),
    validateConfig: call('validateConfig'),
    probeStepTime: call('probeStepTime'),
    cancelStepProbe: call('cancelStepProbe'),
    startRun: call('startRun'),
    stopRun: call('stopRun'),
    resumeRun: call('resumeRun'),
    listRuns: call('listRuns'),
    getRun: call('getRun'),
    getMetricSeries: call('getMetricSeries'),
    getRunsMetricSeries: call('getRunsMetricSeries'),
    getTrajectories: call('getTrajectories'),
    getLiveTrajectories: call('getLiveTrajectories'),
    setRunLabels: call('setRunLabels'),
    evaluateCheckpoint: call('evaluateCheckpoint'),
    compareCheckpoints: call('compareCheckpoints'),
    rolloutSteps: call('rolloutSteps'),
    compareRollouts: call('compareRollouts'),
    studyOptions: call('studyOptions'),
    startStudy: call('startStudy'),
    listStudies: call('listStudies'),
    attachStudy: call('attachStudy'),
    stopClusterJob: call('stopClusterJob'),
    getClusterLog: call('getClusterLog'),
    validateEndpointEval: call('validateEndpointEval'),
    startEndpointEval: call('startEndpointEval'),
    listModels: call('listModels'),
    modelCard: call('modelCard'),
    addModel: call('addModel'),
    fetchModel: call('fetchModel'),
    chatStart: call('chatStart'),
    chatStop: call('chatStop'),
    labPrompts: call('labPrompts'),
    listCodeTrees: call('listCodeTrees'),
    getCodeTrees: call('getCodeTrees'),
    checkCodeTasks: call('checkCodeTasks'),
    startCodeTree: call('startCodeTree'),
    stopCodeTree: call('stopCodeTree'),
    onEvent(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
  };
}
