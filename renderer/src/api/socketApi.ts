/**
 * `window.api` for web mode (`mars-lab serve`): the same contract as Electron's preload, over the server's WebSocket.
 * The token comes from the page's URL (`?token=`), which is the URL the server printed. The socket reconnects after a
 * drop; each connection starts with a 'host-ready' event, so views reload what they show.
 */
import type { ApiEvent, ApiMethod, ApiRequest, ApiResponse, MarsLabApi } from '../../../engine/api/contract';
import { ApiCallError } from './errors';

export type ConnectionState = 'connecting' | 'open' | 'closed';

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export function createSocketApi(token: string, onState: (state: ConnectionState) => void): MarsLabApi {
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api?token=${encodeURIComponent(token)}`;
  const pending = new Map<number, Pending>();
  const listeners = new Set<(event: ApiEvent) => void>();
  let queue: string[] = [];
  let nextId = 1;
  let socket: WebSocket;
  let retryMs = 500;

  const connect = (): void => {
    onState('connecting');
    socket = new WebSocket(url);
    socket.onopen = () => {
      retryMs = 500;
      onState('open');
      for (const message of queue) socket.send(message);
      queue = [];
    };
    socket.onmessage = (message) => {
      let data: { event?: ApiEvent; id?: number; ok?: boolean; result?: unknown; error?: { message: string; issues?: { path: string; message: string }[] } };
      try {
        data = JSON.parse(String(message.data));
      } catch {
        return;
      }
      if (data.event) {
        for (const listener of listeners) listener(data.event);
        return;
      }
      const call = typeof data.id === 'number' ? pending.get(data.id) : undefined;
      if (!call) return;
      pending.delete(data.id!);
      if (data.ok) call.resolve(data.result);
      else call.reject(new ApiCallError(data.error?.message ?? 'the server refused the request', data.error?.issues));
    };
    socket.onclose = () => {
      onState('closed');
      for (const call of pending.values()) call.reject(new ApiCallError('the connection to the mars-lab server was lost'));
      pending.clear();
      // Reconnect (the server may have restarted); a page without the right token gets nowhere and keeps saying so.
      setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, 10_000);
    };
  };
  connect();

  const call =
    <M extends ApiMethod>(method: M) =>
    (request?: ApiRequest<M>): Promise<ApiResponse<M>> =>
      new Promise<ApiResponse<M>>((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
        const text = JSON.stringify({ id, method, params: request ?? {} });
        if (socket.readyState === WebSocket.OPEN) socket.send(text);
        else queue.push(text);
      });

  return {
    ping: call('ping'),
    listPresets: call('listPresets'),
    configSchema: call('configSchema'),
    validateConfig: call('validateConfig'),
    startRun: call('startRun'),
    stopRun: call('stopRun'),
    resumeRun: call('resumeRun'),
    listRuns: call('listRuns'),
    getRun: call('getRun'),
    getMetricSeries: call('getMetricSeries'),
    getTrajectories: call('getTrajectories'),
    getLiveTrajectories: call('getLiveTrajectories'),
    setRunLabels: call('setRunLabels'),
    evaluateCheckpoint: call('evaluateCheckpoint'),
    compareCheckpoints: call('compareCheckpoints'),
    onEvent(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
  };
}
