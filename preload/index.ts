/**
 * Preload: exposes exactly the `MarsLabApi` contract as `window.api`, nothing else (DESIGN.md: preload/).
 *
 * Built as CommonJS (electron.vite.config.ts) because the window runs with `sandbox: true`, where a preload can only
 * `require('electron')` and cannot be an ES module. Everything else it needs is bundled in.
 */
import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron';
import { API_CHANNELS, type ApiEvent, type MarsLabApi } from './contract';

const api: MarsLabApi = {
  ping: () => ipcRenderer.invoke(API_CHANNELS.ping) as Promise<string>,
  onEvent(listener) {
    // Hand the page only the payload: the IpcRendererEvent carries `sender` (the ipcRenderer itself), which would give
    // the page a generic way to send on any channel.
    const forward = (_event: IpcRendererEvent, payload: ApiEvent): void => listener(payload);
    ipcRenderer.on(API_CHANNELS.event, forward);
    return () => {
      ipcRenderer.removeListener(API_CHANNELS.event, forward);
    };
  },
};

contextBridge.exposeInMainWorld('api', api);
