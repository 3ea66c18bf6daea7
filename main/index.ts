/**
 * Electron main: one window, its security settings, and the IPC handlers of the contract (engine/api). Kept thin: every
 * decision that can be tested lives in a plain module beside this one (windowOptions, contentSecurityPolicy,
 * appLocation, navigationGuards, senderCheck) or in engine/api (host, dispatch), which web mode shares.
 */
import { app, BrowserWindow, ipcMain, session } from 'electron';
import { fileURLToPath } from 'node:url';
import { API_EVENT_CHANNEL, API_METHODS, apiChannel, type ApiEvent } from '../engine/api/contract';
import { callApi } from '../engine/api/dispatch';
import { createHost, type Host } from '../engine/api/host';
import { resolveHome } from '../engine/runs/home';
import { ENGINE_VERSION } from '../engine/version';
import { resolveAppLocation, type AppLocation } from './appLocation';
import { withContentSecurityPolicy } from './contentSecurityPolicy';
import { denyPermissionRequest, denyWindowOpen, guardNavigation, preventWebviewAttach } from './navigationGuards';
import { trustedHandler } from './senderCheck';
import { utilityRunLauncher } from './utilityLauncher';
import { createWindowOptions } from './windowOptions';

// Paths relative to the built main (out/main/index.js); electron.vite.config.ts names the preload index.cjs.
const PRELOAD_PATH = fileURLToPath(new URL('../preload/index.cjs', import.meta.url));
const RENDERER_INDEX_FILE = fileURLToPath(new URL('../renderer/index.html', import.meta.url));
/** The CLI entry that run processes start from (it loads the engine's sources through tsx). */
const CLI_BIN = fileURLToPath(new URL('../../engine/bin/mars-lab.mjs', import.meta.url));

/** Every method of the contract on its own channel; each checks its sender, then validates its request (callApi). */
function registerIpcHandlers(location: AppLocation, host: Host): void {
  for (const method of API_METHODS) {
    const channel = apiChannel(method);
    ipcMain.handle(channel, trustedHandler(location, channel, (request: unknown) => callApi(host.handlers, method, request)));
  }
}

async function createMainWindow(location: AppLocation): Promise<BrowserWindow> {
  const window = new BrowserWindow(createWindowOptions(PRELOAD_PATH));
  const contents = window.webContents;
  contents.setWindowOpenHandler(denyWindowOpen);
  contents.on('will-navigate', (event) => guardNavigation(event, location));
  contents.on('will-attach-webview', preventWebviewAttach);
  contents.on('did-finish-load', () => {
    const ready: ApiEvent = { type: 'host-ready', engineVersion: ENGINE_VERSION };
    contents.send(API_EVENT_CHANNEL, ready);
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

  const host = await createHost({ home: resolveHome(), launcher: utilityRunLauncher(CLI_BIN), transport: 'electron' });
  registerIpcHandlers(location, host);
  // Events go to the app's own windows only, and only while they show the app.
  host.subscribe((event) => {
    for (const window of BrowserWindow.getAllWindows()) {
      if (!window.isDestroyed()) window.webContents.send(API_EVENT_CHANNEL, event);
    }
  });
  app.on('will-quit', () => void host.close());

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
