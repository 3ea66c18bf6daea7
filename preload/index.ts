/**
 * Preload: exposes exactly the engine/api contract as `window.api` — one function per method and the event
 * subscription, nothing else (docs/architecture.md: preload/). Main validates every request; the preload only carries it.
 *
 * Built as CommonJS (electron.vite.config.ts) because the window runs with `sandbox: true`, where a preload can only
 * `require('electron')` and cannot be an ES module. It imports only engine/api/contract/methods.ts (plain constants, bundled in):
 * the zod schemas stay in main.
 */
import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron';
import type { ApiEvent, MarsLabApi } from '../engine/api/contract/contract';
import { API_EVENT_CHANNEL, API_METHODS, apiChannel } from '../engine/api/contract/methods';

const methods = Object.fromEntries(
  API_METHODS.map((method) => [method, (request?: unknown) => ipcRenderer.invoke(apiChannel(method), request ?? {})]),
);

const api = {
  ...methods,
  onEvent(listener: (event: ApiEvent) => void): () => void {
    // Hand the page only the payload: the IpcRendererEvent carries `sender` (the ipcRenderer itself), which would give
    // the page a generic way to send on any channel.
    const forward = (_event: IpcRendererEvent, payload: ApiEvent): void => listener(payload);
    ipcRenderer.on(API_EVENT_CHANNEL, forward);
    return () => {
      ipcRenderer.removeListener(API_EVENT_CHANNEL, forward);
    };
  },
} as MarsLabApi;

contextBridge.exposeInMainWorld('api', api);
