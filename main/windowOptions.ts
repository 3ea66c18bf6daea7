/**
 * The app window's BrowserWindow options. The webPreferences are the Electron security checklist's: the page gets no
 * Node, runs in Chromium's sandbox, and sees the preload's world only through contextBridge.
 * A type-only import of Electron: this module stays loadable where the Electron binary is absent (tests).
 */
import type { BrowserWindowConstructorOptions } from 'electron';

export function createWindowOptions(preloadPath: string): BrowserWindowConstructorOptions {
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
    },
  };
}
