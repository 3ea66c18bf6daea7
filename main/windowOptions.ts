/**
 * The app window's BrowserWindow options. The webPreferences are the Electron security checklist's: the page gets no
 * Node, runs in Chromium's sandbox, and sees the preload's world only through contextBridge. A packaged app has no
 * DevTools: a release needs none, and they are a console in the page's world that drives the IPC contract directly.
 * A type-only import of Electron: this module stays loadable where the Electron binary is absent (tests).
 */
import type { BrowserWindowConstructorOptions } from 'electron';

export interface WindowContext {
  /** app.isPackaged. */
  readonly isPackaged: boolean;
}

export function createWindowOptions(preloadPath: string, context: WindowContext): BrowserWindowConstructorOptions {
  return {
    width: 1280,
    height: 800,
    minWidth: 800,
    minHeight: 500,
    title: 'mars-lab',
    show: false, // shown on 'ready-to-show', so the window never flashes blank
    webPreferences: {
      preload: preloadPath,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      navigateOnDragDrop: false,
      spellcheck: false,
      devTools: !context.isPackaged,
    },
  };
}

/** The part of webContents that `closeDevToolsWhenPackaged` touches. */
export interface DevToolsHost {
  on(event: 'devtools-opened', listener: () => void): unknown;
  closeDevTools(): void;
}

/** Second line behind `devTools: false`: should DevTools open anyway in a packaged app, they are closed at once. */
export function closeDevToolsWhenPackaged(contents: DevToolsHost, context: WindowContext): void {
  if (context.isPackaged) contents.on('devtools-opened', () => contents.closeDevTools());
}
