/**
 * The desktop shell's security settings, checked without the Electron binary (it cannot be downloaded on the project's
 * machines): plain modules are called directly, and main/index.ts and preload/index.ts are loaded against a fake
 * `electron` module that records what they register.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it, vi, type Mock } from 'vitest';
import { API_EVENT_CHANNEL, API_KEYS, API_METHODS, apiChannel, type ApiEvent, type MarsLabApi } from '../../engine/api/contract';
import { ENGINE_VERSION } from '../../engine/version';
import { BUILT_APP, isAppUrl, resolveAppLocation, type AppLocation } from '../../main/appLocation';
import { APP_INDEX_URL, APP_SCHEME_PRIVILEGES } from '../../main/appProtocol';
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

type Listener = (...args: never[]) => unknown;

// A fake of the parts of `electron` that main/index.ts and preload/index.ts touch. vi.hoisted: vi.mock below is hoisted
// above the imports, and its factory may only use hoisted values.
const fake = vi.hoisted(() => {
  class FakeWebContents {
    readonly listeners = new Map<string, Listener[]>();
    windowOpenHandler: Listener | null = null;
    readonly sent: Array<[string, unknown]> = [];
    devToolsClosed = 0;
    closeDevTools(): void {
      this.devToolsClosed += 1;
    }
    on(name: string, listener: Listener): this {
      this.listeners.set(name, [...(this.listeners.get(name) ?? []), listener]);
      return this;
    }
    setWindowOpenHandler(handler: Listener): void {
      this.windowOpenHandler = handler;
    }
    send(channel: string, payload: unknown): void {
      this.sent.push([channel, payload]);
    }
  }
  class FakeBrowserWindow {
    static readonly all: FakeBrowserWindow[] = [];
    static getAllWindows(): FakeBrowserWindow[] {
      return FakeBrowserWindow.all;
    }
    readonly webContents = new FakeWebContents();
    loaded: { file?: string; url?: string } | null = null;
    isDestroyed(): boolean {
      return false;
    }
    constructor(readonly options: { webPreferences?: Record<string, unknown> }) {
      FakeBrowserWindow.all.push(this);
    }
    once(): this {
      return this;
    }
    show(): void {}
    loadFile(file: string): Promise<void> {
      this.loaded = { file };
      return Promise.resolve();
    }
    loadURL(url: string): Promise<void> {
      this.loaded = { url };
      return Promise.resolve();
    }
  }
  /** A utilityProcess child whose stdout the test writes to, as a run-worker would. */
  class FakeUtilityProcess {
    static readonly forked: Array<{ modulePath: string; args: string[]; options: unknown; child: FakeUtilityProcess }> = [];
    readonly pid = 4242;
    readonly stdoutListeners: Array<(chunk: Buffer) => void> = [];
    readonly exitListeners: Array<(code: number) => void> = [];
    killed = false;
    readonly stdout = { on: (_name: string, listener: (chunk: Buffer) => void) => void this.stdoutListeners.push(listener) };
    readonly stderr = { on: () => undefined };
    once(name: string, listener: (code: number) => void): this {
      if (name === 'exit') this.exitListeners.push(listener);
      return this;
    }
    kill(): boolean {
      this.killed = true;
      return true;
    }
    writeLine(value: unknown): void {
      for (const listener of this.stdoutListeners) listener(Buffer.from(JSON.stringify(value) + '\n'));
    }
  }
  const ipcHandlers = new Map<string, Listener>();
  const electron = {
    app: {
      isPackaged: false,
      enableSandbox: vi.fn(),
      whenReady: vi.fn(() => Promise.resolve()),
      getVersion: vi.fn(() => '0.1.0-test'),
      on: vi.fn(),
      quit: vi.fn(),
      exit: vi.fn(),
    },
    BrowserWindow: FakeBrowserWindow,
    utilityProcess: {
      fork: vi.fn((modulePath: string, args: string[], options: unknown) => {
        const child = new FakeUtilityProcess();
        FakeUtilityProcess.forked.push({ modulePath, args, options, child });
        return child;
      }),
    },
    ipcMain: { handle: vi.fn((channel: string, handler: Listener) => void ipcHandlers.set(channel, handler)) },
    session: {
      defaultSession: {
        webRequest: { onHeadersReceived: vi.fn() },
        setPermissionRequestHandler: vi.fn(),
        setPermissionCheckHandler: vi.fn(),
        setDevicePermissionHandler: vi.fn(),
      },
    },
    protocol: { registerSchemesAsPrivileged: vi.fn(), handle: vi.fn() },
    contextBridge: { exposeInMainWorld: vi.fn() },
    ipcRenderer: {
      invoke: vi.fn((channel: string, _request: unknown) => Promise.resolve(`answer of ${channel}`)),
      on: vi.fn(),
      removeListener: vi.fn(),
    },
  };
  return { electron, FakeBrowserWindow, FakeUtilityProcess, ipcHandlers };
});

vi.mock('electron', () => fake.electron);

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
    const contents = { on: (_event: 'devtools-opened', listener: () => void) => void listeners.push(listener), closeDevTools: vi.fn() };
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

  it('runs only the app\'s own scripts: no inline scripts, no eval', () => {
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
      'content-security-policy': ["default-src *"],
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
    expect(() => resolveAppLocation({ devServerUrl: 'file:///tmp/x.html', isPackaged: false })).toThrow(/ELECTRON_RENDERER_URL/);
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
    for (const permission of ['clipboard-read', 'clipboard-sanitized-write', 'media', 'notifications', 'hid', 'serial', 'usb']) {
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

describe('main/index.ts wiring (fake electron)', () => {
  beforeAll(async () => {
    delete process.env['ELECTRON_RENDERER_URL'];
    // The host main creates watches this home; an empty temporary one keeps the test away from ~/mars-lab.
    process.env['MARS_LAB_HOME'] = mkdtempSync(join(tmpdir(), 'mars-lab-shell-'));
    await import('../../main/index');
    await vi.waitFor(() => expect(fake.FakeBrowserWindow.all).toHaveLength(1));
  });

  const window = () => fake.FakeBrowserWindow.all[0]!;
  type Handler = (event: IpcSender, request?: unknown) => Promise<unknown>;
  const handler = (method: (typeof API_METHODS)[number]): Handler => {
    const h = fake.ipcHandlers.get(apiChannel(method));
    expect(h, method).toBeDefined();
    return h as unknown as Handler;
  };

  it('sandboxes all renderers and opens the window with the secure options', () => {
    expect(fake.electron.app.enableSandbox).toHaveBeenCalled();
    const prefs = window().options.webPreferences ?? {};
    expect(prefs).toMatchObject({ contextIsolation: true, sandbox: true, nodeIntegration: false, webSecurity: true });
    expect(String(prefs['preload'])).toMatch(/[\\/]preload[\\/]index\.cjs$/);
    expect(prefs['devTools']).toBe(true); // not packaged
    expect(window().loaded).toEqual({ url: 'app://mars-lab/index.html' });
  });

  it('registers app:// as privileged before ready, and serves the renderer folder through it', async () => {
    const { registerSchemesAsPrivileged, handle } = fake.electron.protocol;
    expect(registerSchemesAsPrivileged).toHaveBeenCalledWith([APP_SCHEME_PRIVILEGES]);
    expect(registerSchemesAsPrivileged.mock.invocationCallOrder[0]!).toBeLessThan(
      fake.electron.app.whenReady.mock.invocationCallOrder[0]!,
    );
    expect(handle).toHaveBeenCalledTimes(1);
    const [scheme, serve] = handle.mock.calls[0] as unknown as [string, (request: Request) => Promise<Response>];
    expect(scheme).toBe('app');
    // Under the tests main/index.ts sits in main/, so its '../renderer/' is the source folder with index.html.
    const page = await serve(new Request('app://mars-lab/index.html'));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toBe(readFileSync(RENDERER_INDEX, 'utf8'));
    expect((await serve(new Request('app://mars-lab/../package.json'))).status).toBe(404);
    expect((await serve(new Request('app://mars-lab/..%2fpackage.json'))).status).toBe(404);
  });

  it('denies window.open and blocks navigation away from the app', () => {
    const contents = window().webContents;
    expect(contents.windowOpenHandler?.()).toEqual({ action: 'deny' });
    const [willNavigate] = contents.listeners.get('will-navigate') ?? [];
    expect(willNavigate).toBeDefined();
    const away = navigation('https://example.com/');
    (willNavigate as (event: unknown) => void)(away);
    expect(away.preventDefault).toHaveBeenCalled();
    const stay = navigation(APP_FILE_URL);
    (willNavigate as (event: unknown) => void)(stay);
    expect(stay.preventDefault).not.toHaveBeenCalled();
    expect(contents.listeners.get('will-attach-webview')).toHaveLength(1);
  });

  it('sets the CSP header on responses and denies permissions', () => {
    const onHeaders = fake.electron.session.defaultSession.webRequest.onHeadersReceived;
    expect(onHeaders).toHaveBeenCalledTimes(1);
    const listener = onHeaders.mock.calls[0]![0] as (details: unknown, callback: (response: unknown) => void) => void;
    const callback = vi.fn();
    listener({ responseHeaders: { 'Content-Security-Policy': ['default-src *'] } }, callback);
    expect(callback).toHaveBeenCalledWith({ responseHeaders: { 'Content-Security-Policy': [CONTENT_SECURITY_POLICY_HEADER] } });
    const permissions = fake.electron.session.defaultSession.setPermissionRequestHandler;
    expect(permissions).toHaveBeenCalledWith(denyPermissionRequest);
    expect(fake.electron.session.defaultSession.setPermissionCheckHandler).toHaveBeenCalledWith(denyPermissionCheck);
    expect(fake.electron.session.defaultSession.setDevicePermissionHandler).toHaveBeenCalledWith(denyDevicePermission);
  });

  it('registers exactly one handler per contract method, and nothing else', () => {
    expect([...fake.ipcHandlers.keys()].sort()).toEqual(API_METHODS.map(apiChannel).sort());
  });

  it('refuses every method to a sender that is not the app page, before looking at the request', () => {
    for (const method of API_METHODS) {
      for (const url of ['https://example.com/', 'file:///tmp/evil.html', null]) {
        expect(() => handler(method)(sender(url), {}), `${method} from ${url}`).toThrow(UntrustedSenderError);
      }
    }
  });

  it('answers ping for the app page', async () => {
    await expect(handler('ping')(sender(APP_FILE_URL))).resolves.toMatchObject({ engineVersion: ENGINE_VERSION, transport: 'electron' });
  });

  it('validates each request against the engine/api schemas', async () => {
    const app = sender(APP_FILE_URL);
    await expect(handler('getRun')(app, { runId: '../../etc' })).rejects.toThrow(/getRun: invalid request \(runId/);
    await expect(handler('getRun')(app, { runId: 'x', extra: 1 })).rejects.toThrow(/invalid request/);
    await expect(handler('stopRun')(app, 'not an object')).rejects.toThrow(/invalid request/);
    await expect(handler('getTrajectories')(app, { runId: 'x', limit: 10_000 })).rejects.toThrow(/limit/);
    await expect(handler('startRun')(app, { preset: 'seqgrpo-copy', sets: ['budget.steps=0'] })).rejects.toThrow(/budget\.steps: must be ≥ 1/);
    await expect(handler('listRuns')(app, {})).resolves.toMatchObject({ runs: [] });
  });

  it('starts runs in a utilityProcess running the CLI run-worker, and stops them with kill', async () => {
    const app = sender(APP_FILE_URL);
    const started = handler('startRun')(app, { preset: 'seqgrpo-copy', sets: ['budget.steps=3'] });
    await vi.waitFor(() => expect(fake.FakeUtilityProcess.forked).toHaveLength(1));
    const { modulePath, args, options, child } = fake.FakeUtilityProcess.forked[0]!;
    expect(modulePath).toMatch(/engine[\\/]bin[\\/]mars-lab\.mjs$/);
    expect(args[0]).toBe('run-worker');
    expect(JSON.parse(args[1]!)).toMatchObject({ kind: 'start', preset: 'seqgrpo-copy', config: { algorithm: 'seqgrpo', budget: { steps: 3 } } });
    expect(options).toMatchObject({ stdio: 'pipe' });
    child.writeLine({ type: 'created', runId: 'r1', dir: '/x/runs/r1' });
    await expect(started).resolves.toEqual({ runId: 'r1' });
    await expect(handler('stopRun')(app, { runId: 'r1' })).resolves.toMatchObject({ stopping: true });
    expect(child.killed).toBe(true);
    for (const listener of child.exitListeners) listener(0);
  });

  it('tells the page the host is ready once it has loaded', () => {
    const contents = window().webContents;
    for (const listener of contents.listeners.get('did-finish-load') ?? []) (listener as () => void)();
    const ready: ApiEvent = { type: 'host-ready', engineVersion: ENGINE_VERSION };
    expect(contents.sent).toContainEqual([API_EVENT_CHANNEL, ready]);
  });
});

describe('preload (fake electron)', () => {
  let exposed: MarsLabApi;

  beforeAll(async () => {
    await import('../../preload/index');
    const calls = fake.electron.contextBridge.exposeInMainWorld.mock.calls;
    expect(calls).toHaveLength(1);
    expect(calls[0]![0]).toBe('api');
    exposed = calls[0]![1] as MarsLabApi;
  });

  it('exposes exactly the contract\'s keys, all functions', () => {
    expect(Object.keys(exposed).sort()).toEqual([...API_KEYS].sort());
    for (const key of API_KEYS) expect(typeof exposed[key]).toBe('function');
  });

  it('each method invokes its own channel with the request', async () => {
    await expect(exposed.ping()).resolves.toBe('answer of api:ping');
    expect(fake.electron.ipcRenderer.invoke).toHaveBeenCalledWith('api:ping', {});
    await exposed.getRun({ runId: 'r1' });
    expect(fake.electron.ipcRenderer.invoke).toHaveBeenCalledWith('api:getRun', { runId: 'r1' });
    for (const method of API_METHODS) {
      await (exposed[method] as (request: unknown) => Promise<unknown>)({});
      expect(fake.electron.ipcRenderer.invoke).toHaveBeenLastCalledWith(apiChannel(method), {});
    }
  });

  it('onEvent hands the page only the payload, and unsubscribes', () => {
    const received: unknown[] = [];
    const unsubscribe = exposed.onEvent((event) => received.push(event));
    const on = fake.electron.ipcRenderer.on;
    expect(on).toHaveBeenCalledTimes(1);
    const [channel, forward] = on.mock.calls[0] as unknown as [string, (event: unknown, payload: ApiEvent) => void];
    expect(channel).toBe(API_EVENT_CHANNEL);
    const payload: ApiEvent = { type: 'host-ready', engineVersion: '0.1.0-test' };
    forward({ sender: fake.electron.ipcRenderer }, payload);
    expect(received).toEqual([payload]);
    unsubscribe();
    expect(fake.electron.ipcRenderer.removeListener).toHaveBeenCalledWith(API_EVENT_CHANNEL, forward);
  });
});

describe('main/index.ts in a packaged app (fake electron)', () => {
  beforeAll(async () => {
    fake.electron.app.isPackaged = true;
    // A packaged app must not follow the environment, not even to a loopback dev server.
    process.env['ELECTRON_RENDERER_URL'] = 'http://localhost:5173/';
    vi.resetModules();
    await import('../../main/index');
    await vi.waitFor(() => expect(fake.FakeBrowserWindow.all).toHaveLength(2));
  });

  const packagedWindow = () => fake.FakeBrowserWindow.all[1]!;

  it('loads the built app from app://, ignoring ELECTRON_RENDERER_URL', () => {
    expect(packagedWindow().loaded).toEqual({ url: 'app://mars-lab/index.html' });
  });

  it('opens the window without DevTools, and closes them should they open', () => {
    expect(packagedWindow().options.webPreferences?.['devTools']).toBe(false);
    const contents = packagedWindow().webContents;
    const opened = contents.listeners.get('devtools-opened') ?? [];
    expect(opened).toHaveLength(1);
    (opened[0] as () => void)();
    expect(contents.devToolsClosed).toBe(1);
  });
});
