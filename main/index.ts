/**
 * Electron main: one window, its security settings, and the IPC handlers of the contract (engine/api). Kept thin: every
 * decision that can be tested lives in a plain module beside this one (windowOptions, contentSecurityPolicy,
 * appLocation, appProtocol, navigationGuards, senderCheck) or in engine/api (host, dispatch), which web mode shares.
 * The built renderer loads from app://mars-lab/ (appProtocol.ts), never from file://.
 */
import { app, BrowserWindow, ipcMain, protocol, session } from 'electron';
import { fileURLToPath } from 'node:url';
import { API_EVENT_CHANNEL, API_METHODS, apiChannel, type ApiEvent } from '../engine/api/contract/contract';
import { callApi } from '../engine/api/host/dispatch';
import { createHost, type Host } from '../engine/api/host/host';
import { resolveHome } from '../engine/runs/folder/home';
import { UserError } from '../engine/base/userError';
import { ENGINE_VERSION } from '../engine/base/version';
import { resolveAppLocation, type AppLocation } from './appLocation';
import { APP_SCHEME, APP_SCHEME_PRIVILEGES, createAppProtocolHandler } from './appProtocol';
import { withContentSecurityPolicy } from './contentSecurityPolicy';
import {
  denyDevicePermission,
  denyPermissionCheck,
  denyPermissionRequest,
  denyWindowOpen,
  guardNavigation,
  preventWebviewAttach,
} from './navigationGuards';
import { trustedHandler } from './senderCheck';
import { utilityRunLauncher } from './utilityLauncher';
import { closeDevToolsWhenPackaged, createWindowOptions, type WindowContext } from './windowOptions';

// Paths relative to the built main (out/main/index.js); electron.vite.config.ts names the preload index.cjs.
const PRELOAD_PATH = fileURLToPath(new URL('../preload/index.cjs', import.meta.url));
/** The built renderer's folder: the only files app://mars-lab/ serves. */
const RENDERER_DIR = fileURLToPath(new URL('../renderer/', import.meta.url));
/** The CLI entry that run processes start from (the built engine in out/cli, or its sources through tsx). */
const CLI_BIN = fileURLToPath(new URL('../../engine/bin/mars-lab.mjs', import.meta.url));

/** Every method of the contract on its own channel; each checks its sender, then validates its request (callApi). */
function registerIpcHandlers(location: AppLocation, host: Host): void {
  for (const method of API_METHODS) {
    const channel = apiChannel(method);
    ipcMain.handle(
      channel,
      trustedHandler(location, channel, (request: unknown) => callApi(host.handlers, method, request)),
    );
  }
}

async function createMainWindow(location: AppLocation, context: WindowContext): Promise<BrowserWindow> {
  const window = new BrowserWindow(createWindowOptions(PRELOAD_PATH, context));
  const contents = window.webContents;
  closeDevToolsWhenPackaged(contents, context);
  contents.setWindowOpenHandler(denyWindowOpen);
  contents.on('will-navigate', (event) => guardNavigation(event, location));
  contents.on('will-attach-webview', preventWebviewAttach);
  contents.on('did-finish-load', () => {
    const ready: ApiEvent = { type: 'host-ready', engineVersion: ENGINE_VERSION };
    contents.send(API_EVENT_CHANNEL, ready);
  });
  window.once('ready-to-show', () => window.show());

  await window.loadURL(location.url);
  return window;
}

async function start(): Promise<void> {
  await app.whenReady();
  const context: WindowContext = { isPackaged: app.isPackaged };
  // A packaged app ignores ELECTRON_RENDERER_URL; an unpackaged one follows it only to loopback http(s).
  const location = resolveAppLocation({
    devServerUrl: process.env['ELECTRON_RENDERER_URL'],
    isPackaged: context.isPackaged,
  });

  // The built renderer: app://mars-lab/… answers from out/renderer only, each response with the CSP header.
  protocol.handle(APP_SCHEME, createAppProtocolHandler(RENDERER_DIR));
  // The dev server's responses get the same policy here (the meta tag in renderer/index.html carries it as well).
  session.defaultSession.webRequest.onHeadersReceived((details, callback) => {
    callback({ responseHeaders: withContentSecurityPolicy(details.responseHeaders) });
  });
  session.defaultSession.setPermissionRequestHandler(denyPermissionRequest);
  session.defaultSession.setPermissionCheckHandler(denyPermissionCheck);
  session.defaultSession.setDevicePermissionHandler(denyDevicePermission);

  const host = await createHost({ home: resolveHome(), launcher: utilityRunLauncher(CLI_BIN), transport: 'electron' });
  registerIpcHandlers(location, host);
  // Events go to the app's own windows only, and only while they show the app.
  host.subscribe((event) => {
    for (const window of BrowserWindow.getAllWindows()) {
      if (!window.isDestroyed()) window.webContents.send(API_EVENT_CHANNEL, event);
    }
  });
  app.on('will-quit', () => void host.close());

  await createMainWindow(location, context);
  app.on('activate', () => {
    if (BrowserWindow.getAllWindows().length === 0) void createMainWindow(location, context);
  });
}

// Sandbox every renderer, including any created later, whatever its own webPreferences say. Must run before 'ready'.
app.enableSandbox();
// app:// must be known as a standard, secure scheme before 'ready' (protocol.handle above serves it after).
protocol.registerSchemesAsPrivileged([APP_SCHEME_PRIVILEGES]);
app.on('window-all-closed', () => {
  if (process.platform !== 'darwin') app.quit();
});

start().catch((error: unknown) => {
  // A refused ELECTRON_RENDERER_URL (or another fixable setting) is one line; anything else keeps its stack.
  console.error('mars-lab failed to start:', error instanceof UserError ? error.message : error);
  app.exit(1);
});
