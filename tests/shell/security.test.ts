/**
 * The desktop shell's security settings, checked without the Electron binary (it cannot be downloaded on the project's
 * machines): the plain modules of main/ are called directly. How main/index.ts and preload/index.ts wire them is in
 * mainWiring.test.ts, against a fake `electron` module.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it, vi, type Mock } from 'vitest';
import { BUILT_APP, isAppUrl, resolveAppLocation, type AppLocation } from '../../main/appLocation';
import { APP_INDEX_URL } from '../../main/appProtocol';
import {
  CONTENT_SECURITY_POLICY,
  CONTENT_SECURITY_POLICY_HEADER,
  withContentSecurityPolicy,
} from '../../main/contentSecurityPolicy';
import {
  denyDevicePermission,
  denyPermissionCheck,
  denyPermissionRequest,
  denyWindowOpen,
  guardNavigation,
} from '../../main/navigationGuards';
import { isTrustedSender, trustedHandler, UntrustedSenderError, type IpcSender } from '../../main/senderCheck';
import { closeDevToolsWhenPackaged, createWindowOptions } from '../../main/windowOptions';

const RENDERER_INDEX = resolve('renderer/index.html');
const FILE_APP: AppLocation = resolveAppLocation({ devServerUrl: undefined, isPackaged: false });
const DEV_APP: AppLocation = resolveAppLocation({ devServerUrl: 'http://localhost:5173/', isPackaged: false });
/** The built app's page: app://mars-lab/index.html (main/appProtocol.ts). */
const APP_FILE_URL = APP_INDEX_URL;

function navigation(url: string): { url: string; preventDefault: Mock<() => void> } {
  return { url, preventDefault: vi.fn<() => void>() };
}

function sender(url: string | null): IpcSender {
  return { senderFrame: url === null ? null : { url } };
}

/** The policy as directive name → sources. */
function parseCsp(policy: string): Map<string, string[]> {
  const directives = new Map<string, string[]>();
  for (const part of policy.split(';')) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (name) directives.set(name, sources);
  }
  return directives;
}

describe('window options', () => {
  const prefs = createWindowOptions('/app/out/preload/index.cjs', { isPackaged: false }).webPreferences ?? {};

  it('isolates the page from Node and the preload', () => {
    expect(prefs.contextIsolation).toBe(true);
    expect(prefs.sandbox).toBe(true);
    expect(prefs.nodeIntegration).toBe(false);
    expect(prefs.nodeIntegrationInWorker).toBe(false);
    expect(prefs.nodeIntegrationInSubFrames).toBe(false);
  });

  it('keeps web security on and webviews off', () => {
    expect(prefs.webSecurity).toBe(true);
    expect(prefs.allowRunningInsecureContent).toBe(false);
    expect(prefs.webviewTag).toBe(false);
  });

  it('uses the given preload', () => {
    expect(prefs.preload).toBe('/app/out/preload/index.cjs');
  });

  it('has DevTools only when not packaged', () => {
    expect(prefs.devTools).toBe(true);
    const packaged = createWindowOptions('/app/out/preload/index.cjs', { isPackaged: true }).webPreferences ?? {};
    expect(packaged.devTools).toBe(false);
  });

  it('closes DevTools at once should they open in a packaged app', () => {
    const listeners: Array<() => void> = [];
    const contents = {
      on: (_event: 'devtools-opened', listener: () => void) => void listeners.push(listener),
      closeDevTools: vi.fn(),
    };
    closeDevToolsWhenPackaged(contents, { isPackaged: false });
    expect(listeners).toHaveLength(0);
    closeDevToolsWhenPackaged(contents, { isPackaged: true });
    expect(listeners).toHaveLength(1);
    listeners[0]!();
    expect(contents.closeDevTools).toHaveBeenCalledTimes(1);
  });
});

describe('content security policy', () => {
  const csp = parseCsp(CONTENT_SECURITY_POLICY);

  it("runs only the app's own scripts: no inline scripts, no eval", () => {
    expect(csp.get('default-src')).toEqual(["'self'"]);
    expect(csp.get('script-src')).toEqual(["'self'", "'wasm-unsafe-eval'"]);
    for (const directive of ['default-src', 'script-src', 'worker-src']) {
      expect(csp.get(directive)).not.toContain("'unsafe-inline'");
      expect(csp.get(directive)).not.toContain("'unsafe-eval'");
    }
    expect(csp.get('object-src')).toEqual(["'none'"]);
    expect(csp.get('base-uri')).toEqual(["'none'"]);
  });

  it('names no remote origin in any directive', () => {
    for (const policy of [CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY_HEADER]) {
      for (const [directive, sources] of parseCsp(policy)) {
        for (const source of sources) {
          // Keywords ('self', 'none', …) and the page's own data:/blob: URLs; never a host, a scheme like https: or ws:, or *.
          const local = /^'[a-z-]+'$/.test(source) || source === 'data:' || source === 'blob:';
          expect(local, `${directive} allows '${source}'`).toBe(true);
        }
      }
    }
  });

  it('is the same policy in main and in renderer/index.html', () => {
    const html = readFileSync(RENDERER_INDEX, 'utf8');
    const meta = /<meta\s+http-equiv="Content-Security-Policy"\s+content="([^"]*)"/i.exec(html);
    expect(meta?.[1]).toBe(CONTENT_SECURITY_POLICY);
    expect(CONTENT_SECURITY_POLICY_HEADER.startsWith(CONTENT_SECURITY_POLICY)).toBe(true);
    expect(parseCsp(CONTENT_SECURITY_POLICY_HEADER).get('frame-ancestors')).toEqual(["'none'"]);
  });

  it('replaces any policy a server sent, whatever its spelling', () => {
    const headers = withContentSecurityPolicy({
      'content-type': ['text/html'],
      'content-security-policy': ['default-src *'],
      'CONTENT-SECURITY-POLICY': ["script-src 'unsafe-inline'"],
    });
    const cspHeaders = Object.keys(headers).filter((name) => name.toLowerCase() === 'content-security-policy');
    expect(cspHeaders).toEqual(['Content-Security-Policy']);
    expect(headers['Content-Security-Policy']).toEqual([CONTENT_SECURITY_POLICY_HEADER]);
    expect(headers['content-type']).toEqual(['text/html']);
  });
});

describe('app location', () => {
  it('loads the built app from app:// unless a dev server is given to an unpackaged app', () => {
    expect(FILE_APP).toEqual(BUILT_APP);
    expect(FILE_APP).toEqual({ kind: 'app-protocol', url: 'app://mars-lab/index.html' });
    expect(DEV_APP).toMatchObject({ kind: 'dev-server', origin: 'http://localhost:5173' });
    const packaged = resolveAppLocation({ devServerUrl: 'http://localhost:5173/', isPackaged: true });
    expect(packaged).toEqual(BUILT_APP);
    expect(() => resolveAppLocation({ devServerUrl: 'file:///tmp/x.html', isPackaged: false })).toThrow(
      /ELECTRON_RENDERER_URL/,
    );
  });

  it('recognises the app page and nothing else', () => {
    expect(isAppUrl(APP_FILE_URL, FILE_APP)).toBe(true);
    expect(isAppUrl(`${APP_FILE_URL}#/runs`, FILE_APP)).toBe(true);
    expect(isAppUrl(`${APP_FILE_URL}?view=runs`, FILE_APP)).toBe(true);
    // The built app is no file: the renderer's own index.html on disk is not the app page any more.
    expect(isAppUrl(`file://${RENDERER_INDEX}`, FILE_APP)).toBe(false);
    expect(isAppUrl('file:///etc/passwd', FILE_APP)).toBe(false);
    expect(isAppUrl('app://mars-lab/other.html', FILE_APP)).toBe(false);
    expect(isAppUrl('app://mars-lab/assets/index.js', FILE_APP)).toBe(false);
    expect(isAppUrl('app://other/index.html', FILE_APP)).toBe(false);
    expect(isAppUrl('app://user@mars-lab/index.html', FILE_APP)).toBe(false);
    expect(isAppUrl('https://mars-lab/index.html', FILE_APP)).toBe(false);
    expect(isAppUrl('app://mars-lab/x/%2e%2e/index.html', FILE_APP)).toBe(true); // the same page, dot segment resolved
    expect(isAppUrl('app://mars-lab/index.html/%2e%2e/other.html', FILE_APP)).toBe(false);
    expect(isAppUrl('http://localhost:5173/src/main.ts', DEV_APP)).toBe(true);
    expect(isAppUrl('http://localhost:5174/', DEV_APP)).toBe(false);
    expect(isAppUrl('https://localhost:5173/', DEV_APP)).toBe(false);
    expect(isAppUrl('not a url', DEV_APP)).toBe(false);
  });
});

describe('navigation and new windows', () => {
  it('prevents navigation to another origin or file', () => {
    for (const url of ['https://example.com/', 'file:///etc/passwd', 'javascript:alert(1)', 'about:blank']) {
      const event = navigation(url);
      guardNavigation(event, FILE_APP);
      expect(event.preventDefault, url).toHaveBeenCalled();
    }
    const away = navigation('http://127.0.0.1:5173/');
    guardNavigation(away, DEV_APP);
    expect(away.preventDefault).toHaveBeenCalled();
  });

  it('lets the app page reload itself', () => {
    const reload = navigation(`${APP_FILE_URL}?view=runs`);
    guardNavigation(reload, FILE_APP);
    expect(reload.preventDefault).not.toHaveBeenCalled();
    const devReload = navigation('http://localhost:5173/index.html');
    guardNavigation(devReload, DEV_APP);
    expect(devReload.preventDefault).not.toHaveBeenCalled();
  });

  it('denies window.open and every permission request', () => {
    expect(denyWindowOpen()).toEqual({ action: 'deny' });
    const callback = vi.fn();
    denyPermissionRequest({}, 'media', callback);
    expect(callback).toHaveBeenCalledWith(false);
  });

  it('answers every permission check and device request with no', () => {
    for (const permission of [
      'clipboard-read',
      'clipboard-sanitized-write',
      'media',
      'notifications',
      'hid',
      'serial',
      'usb',
    ]) {
      expect(denyPermissionCheck(), permission).toBe(false);
    }
    expect(denyDevicePermission()).toBe(false);
  });
});

describe('IPC sender check', () => {
  it('accepts the app page and rejects everything else', () => {
    expect(isTrustedSender(sender(APP_FILE_URL), FILE_APP)).toBe(true);
    expect(isTrustedSender(sender('https://example.com/'), FILE_APP)).toBe(false);
    expect(isTrustedSender(sender('file:///tmp/evil.html'), FILE_APP)).toBe(false);
    expect(isTrustedSender(sender(null), FILE_APP)).toBe(false);
    const disposed: IpcSender = {
      get senderFrame(): { url: string } {
        throw new Error('Render frame was disposed before WebFrameMain could be accessed');
      },
    };
    expect(isTrustedSender(disposed, FILE_APP)).toBe(false);
  });

  it('runs a wrapped handler only for the app', () => {
    const handler = vi.fn(() => 'answer');
    const wrapped = trustedHandler(FILE_APP, 'api:test', handler);
    expect(() => wrapped(sender('https://example.com/'))).toThrow(UntrustedSenderError);
    expect(handler).not.toHaveBeenCalled();
    expect(wrapped(sender(APP_FILE_URL))).toBe('answer');
  });
});
