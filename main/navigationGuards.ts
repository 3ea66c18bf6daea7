/**
 * What the window may not do on its own: leave the app, open windows, embed webviews, obtain or even probe permissions.
 * Plain functions with structural parameter types, so tests call them without Electron.
 */
import { isAppUrl, type AppLocation } from './appLocation';

export interface PreventableNavigation {
  readonly url: string;
  preventDefault(): void;
}

/** For webContents 'will-navigate': stay on the app's page; any other destination is cancelled. */
export function guardNavigation(event: PreventableNavigation, app: AppLocation): void {
  if (!isAppUrl(event.url, app)) event.preventDefault();
}

/** For setWindowOpenHandler: the app has one window; links that should open a browser will go through a contract call. */
export function denyWindowOpen(): { action: 'deny' } {
  return { action: 'deny' };
}

/** For 'will-attach-webview': webviewTag is off already; this also refuses if something turns it on. */
export function preventWebviewAttach(event: { preventDefault(): void }): void {
  event.preventDefault();
}

/** For session.setPermissionRequestHandler: the app needs no camera, notifications, geolocation, … */
export function denyPermissionRequest(
  _webContents: unknown,
  _permission: string,
  callback: (granted: boolean) => void,
): void {
  callback(false);
}

/**
 * For session.setPermissionCheckHandler: the synchronous "is this permission granted?" that Chromium asks before and
 * besides any request (navigator.permissions.query, clipboard, HID/serial/USB enumeration, …). Without it these
 * checks fall to Electron's default, which grants them. The app needs none, so every check says no.
 */
export function denyPermissionCheck(): boolean {
  return false;
}

/** For session.setDevicePermissionHandler: no HID, serial or USB device is ever granted to the page. */
export function denyDevicePermission(): boolean {
  return false;
}
