/**
 * Electron main: one window, its security settings, and the IPC handlers of the contract. Kept thin: every decision
 * that can be tested lives in a plain module beside this one (windowOptions, contentSecurityPolicy, appLocation,
 * navigationGuards, senderCheck).
 */
import { app, BrowserWindow, ipcMain, session } from 'electron';
import { fileURLToPath } from 'node:url';
import { API_CHANNELS, type ApiEvent } from '../preload/contract';
import { resolveAppLocation, type AppLocation } from './appLocation';
import { withContentSecurityPolicy } from './contentSecurityPolicy';
import { denyPermissionRequest, denyWindowOpen, guardNavigation, preventWebviewAttach } from './navigationGuards';
import { trustedHandler } from './senderCheck';
import { createWindowOptions } from './windowOptions';

// Paths relative to the built main (out/main/index.js); electron.vite.config.ts names the preload index.cjs.
const PRELOAD_PATH = fileURLToPath(new URL('../preload/index.cjs', import.meta.url));
const RENDERER_INDEX_FILE = fileURLToPath(new URL('../renderer/index.html', import.meta.url));

/** The engine's version. The engine ships in this package, so until engine/ exports its own constant it is the app's. */
function engineVersion(): string {
  return app.getVersion();
}

function registerIpcHandlers(location: AppLocation): void {
  ipcMain.handle(API_CHANNELS.ping, trustedHandler(location, API_CHANNELS.ping, engineVersion));
}

async function createMainWindow(location: AppLocation): Promise<BrowserWindow> {
  const window = new BrowserWindow(createWindowOptions(PRELOAD_PATH));
  const contents = window.webContents;
  contents.setWindowOpenHandler(denyWindowOpen);
  contents.on('will-navigate', (event) => guardNavigation(event, location));
  contents.on('will-attach-webview', preventWebviewAttach);
  contents.on('did-finish-load', () => {
    const ready: ApiEvent = { type: 'host-ready', engineVersion: engineVersion() };
    contents.send(API_CHANNELS.event, ready);
  });
  window.once('ready-to-show', () => window.show());

  if (location.kind === 'dev-server') await window.loadURL(location.url);
  else await window.loadFile(location.path);
  return window;
}

async function start(): Promise<void> {
  await app.whenReady();
  const location = resolveAppLocation({
    devServerUrl: process.env['ELECTRON_RENDERER_URL'],
    isPackaged: app.isPackaged,
    rendererIndexFile: RENDERER_INDEX_FILE,
  });

  // file:// responses do not pass through webRequest; there the meta tag in renderer/index.html applies the same policy.
  session.defaultSession.webRequest.onHeadersReceived((details, callback) => {
    callback({ responseHeaders: withContentSecurityPolicy(details.responseHeaders) });
  });
  session.defaultSession.setPermissionRequestHandler(denyPermissionRequest);
  registerIpcHandlers(location);

  await createMainWindow(location);
  app.on('activate', () => {
    if (BrowserWindow.getAllWindows().length === 0) void createMainWindow(location);
  });
}

// Sandbox every renderer, including any created later, whatever its own webPreferences say. Must run before 'ready'.
app.enableSandbox();
app.on('window-all-closed', () => {
  if (process.platform !== 'darwin') app.quit();
});

start().catch((error: unknown) => {
  console.error('mars-lab failed to start:', error);
  app.exit(1);
});
