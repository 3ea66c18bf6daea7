/**
 * The contract between the host (Electron main, later the web server) and the window: what `window.api` offers.
 *
 * It lives here only until `engine/api/` exists (DESIGN.md "The shape of the house"); then it moves there and preload,
 * main and renderer import it from that room. It must stay free of Electron, DOM and Node imports: the renderer imports
 * it as a type, the preload bundles its constants, and the web-mode client will implement the same type over a socket.
 */

/** Events the host pushes to the window. A discriminated union: each later event adds a member. */
export type ApiEvent = { readonly type: 'host-ready'; readonly engineVersion: string };

/** What the page may call. Nothing generic (no channel names, no ipcRenderer): one method per capability. */
export interface MarsLabApi {
  /** Answers with the engine's version; proves the bridge and the host are alive. */
  ping(): Promise<string>;
  /** Subscribes to host events; returns the function that unsubscribes. */
  onEvent(listener: (event: ApiEvent) => void): () => void;
}

/** The keys the preload exposes, checked below to be exactly the keys of `MarsLabApi`. */
export const API_KEYS = ['ping', 'onEvent'] as const;

// Compile-time proof that API_KEYS and MarsLabApi name the same members: adding a method to one and not the other fails
// the type check.
type MissingFromKeys = Exclude<keyof MarsLabApi, (typeof API_KEYS)[number]>;
type UnknownInKeys = Exclude<(typeof API_KEYS)[number], keyof MarsLabApi>;
const keysMatchContract: [MissingFromKeys, UnknownInKeys] extends [never, never] ? true : false = true;
void keysMatchContract;

/** IPC channel names. Only main and preload use them; the page never sees a channel name. */
export const API_CHANNELS = {
  ping: 'api:ping',
  event: 'api:event',
} as const;
