/**
 * The one `MarsLabApi` the views use: Electron's preload sets `window.api`; in a browser (web mode) it is built over the
 * server's WebSocket with the token the server printed. Views import `api` and `connection` from here, never a transport.
 *
 * The token arrives once, in the printed URL's `?token=`. It moves into sessionStorage (this tab, this origin, which
 * includes the port) and out of the address bar and history (`history.replaceState`, the hash route kept), so it is
 * not shown, bookmarked or copied with a link; a reload finds it in sessionStorage. It is never put in a cookie.
 */
import type { MarsLabApi } from '../../../engine/api/contract/contract';
import { createSocketApi, type ConnectionState } from './socketApi';

export const connection = $state<{
  state: ConnectionState | 'electron' | 'no-host';
  transport: 'electron' | 'web' | null;
}>({
  state: 'connecting',
  transport: null,
});

const TOKEN_KEY = 'mars-lab-token';

/** The token from the URL (then stored, and dropped from the URL), or the one stored by an earlier load of this tab. */
function takeToken(): string | null {
  // eslint-disable-next-line svelte/prefer-svelte-reactivity -- a local copy of the URL's query, not state: read, edited and written back at once
  const params = new URLSearchParams(location.search);
  const fromUrl = params.get('token');
  if (fromUrl) {
    try {
      sessionStorage.setItem(TOKEN_KEY, fromUrl);
    } catch {
      // storage off: the token lives for this load only
    }
    params.delete('token');
    const query = params.toString();
    history.replaceState(history.state, '', `${location.pathname}${query ? `?${query}` : ''}${location.hash}`);
    return fromUrl;
  }
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

function chooseApi(): MarsLabApi | null {
  if (window.api) {
    connection.state = 'electron';
    connection.transport = 'electron';
    return window.api;
  }
  const token = takeToken();
  if (!token) {
    connection.state = 'no-host';
    return null;
  }
  connection.transport = 'web';
  return createSocketApi(token, (state) => (connection.state = state));
}

/** null when the page was opened without a host (a bare file, or a URL without the token). */
export const api: MarsLabApi | null = chooseApi();
