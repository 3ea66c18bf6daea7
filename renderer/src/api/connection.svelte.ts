/**
 * The one `MarsLabApi` the views use: Electron's preload sets `window.api`; in a browser (web mode) it is built over the
 * server's WebSocket from the token in the page's URL. Views import `api` and `connection` from here, never a transport.
 */
import type { MarsLabApi } from '../../../engine/api/contract';
import { createSocketApi, type ConnectionState } from './socketApi';

export const connection = $state<{ state: ConnectionState | 'electron' | 'no-host'; transport: 'electron' | 'web' | null }>({
  state: 'connecting',
  transport: null,
});

function chooseApi(): MarsLabApi | null {
  if (window.api) {
    connection.state = 'electron';
    connection.transport = 'electron';
    return window.api;
  }
  const token = new URLSearchParams(location.search).get('token');
  if (!token) {
    connection.state = 'no-host';
    return null;
  }
  connection.transport = 'web';
  return createSocketApi(token, (state) => (connection.state = state));
}

/** null when the page was opened without a host (a bare file, or a URL without the token). */
export const api: MarsLabApi | null = chooseApi();
