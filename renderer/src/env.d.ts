/// <reference types="svelte" />
/// <reference types="vite/client" />
import type { MarsLabApi } from '../../engine/api/contract/contract';

declare global {
  interface Window {
    /** Set by the preload in Electron (and, later, by the web-mode client); absent in a bare browser. */
    readonly api?: MarsLabApi;
  }
}
