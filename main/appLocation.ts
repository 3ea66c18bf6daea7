/**
 * Where the app's page comes from, and whether a URL belongs to it. Navigation guards and IPC sender checks both ask
 * `isAppUrl`, so "is this our page?" has one answer.
 */
import { fileURLToPath, pathToFileURL } from 'node:url';

export type AppLocation =
  /** electron-vite dev: the renderer is served by Vite; everything on that origin is the app. */
  | { readonly kind: 'dev-server'; readonly url: string; readonly origin: string }
  /** Built app: exactly one HTML file on disk is the app; other file:// URLs are not. */
  | { readonly kind: 'file'; readonly url: string; readonly path: string };

export interface AppLocationInputs {
  /** ELECTRON_RENDERER_URL, set by `electron-vite dev`. */
  readonly devServerUrl: string | undefined;
  /** app.isPackaged: a packaged app never follows the environment to another page. */
  readonly isPackaged: boolean;
  /** Absolute path of the built renderer/index.html. */
  readonly rendererIndexFile: string;
}

export function resolveAppLocation(inputs: AppLocationInputs): AppLocation {
  if (inputs.devServerUrl && !inputs.isPackaged) {
    const url = new URL(inputs.devServerUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new Error(`ELECTRON_RENDERER_URL must be an http(s) URL, got '${inputs.devServerUrl}'; unset it to load the built renderer.`);
    }
    return { kind: 'dev-server', url: url.href, origin: url.origin };
  }
  return { kind: 'file', url: pathToFileURL(inputs.rendererIndexFile).href, path: inputs.rendererIndexFile };
}

/** True when `candidate` is the app's page (any query or fragment), false for anything else, including garbage. */
export function isAppUrl(candidate: string, app: AppLocation): boolean {
  let url: URL;
  try {
    url = new URL(candidate);
  } catch {
    return false;
  }
  if (app.kind === 'dev-server') return url.origin === app.origin;
  if (url.protocol !== 'file:' || url.host !== '') return false;
  try {
    // Compare decoded paths, so `%2e%2e` or different percent-encodings cannot dress up another file as the app.
    return fileURLToPath(url) === app.path;
  } catch {
    return false;
  }
}
