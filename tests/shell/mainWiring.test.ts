/**
 * main/index.ts and preload/index.ts loaded against a fake `electron` module that records what they register (the
 * Electron binary cannot be downloaded on the project's machines): the window's options and page, the app:// scheme,
 * the session's handlers, the IPC handlers and the preload's surface; last, the same main as a packaged app.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it, vi, type Mock } from 'vitest';
import {
  API_EVENT_CHANNEL,
  API_KEYS,
  API_METHODS,
  apiChannel,
  type ApiEvent,
  type MarsLabApi,
} from '../../engine/api/contract/contract';
import { ENGINE_VERSION } from '../../engine/base/version';
import { APP_INDEX_URL, APP_SCHEME_PRIVILEGES } from '../../main/appProtocol';
import { CONTENT_SECURITY_POLICY_HEADER } from '../../main/contentSecurityPolicy';
import { denyDevicePermission, denyPermissionCheck, denyPermissionRequest } from '../../main/navigationGuards';
import { UntrustedSenderError, type IpcSender } from '../../main/senderCheck';

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
    static readonly forked: Array<{ modulePath: string; args: string[]; options: unknown; child: FakeUtilityProcess }> =
      [];
    readonly pid = 4242;
    readonly stdoutListeners: Array<(chunk: Buffer) => void> = [];
    readonly exitListeners: Array<(code: number) => void> = [];
    killed = false;
    readonly stdout = {
      on: (_name: string, listener: (chunk: Buffer) => void) => void this.stdoutListeners.push(listener),
    };
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
/** The built app's page: app://mars-lab/index.html (main/appProtocol.ts). */
const APP_FILE_URL = APP_INDEX_URL;

function navigation(url: string): { url: string; preventDefault: Mock<() => void> } {
  return { url, preventDefault: vi.fn<() => void>() };
}

function sender(url: string | null): IpcSender {
  return { senderFrame: url === null ? null : { url } };
}

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
    expect(callback).toHaveBeenCalledWith({
      responseHeaders: { 'Content-Security-Policy': [CONTENT_SECURITY_POLICY_HEADER] },
    });
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
    await expect(handler('ping')(sender(APP_FILE_URL))).resolves.toMatchObject({
      engineVersion: ENGINE_VERSION,
      transport: 'electron',
    });
  });

  it('validates each request against the engine/api schemas', async () => {
    const app = sender(APP_FILE_URL);
    await expect(handler('getRun')(app, { runId: '../../etc' })).rejects.toThrow(/getRun: invalid request \(runId/);
    await expect(handler('getRun')(app, { runId: 'x', extra: 1 })).rejects.toThrow(/invalid request/);
    await expect(handler('stopRun')(app, 'not an object')).rejects.toThrow(/invalid request/);
    await expect(handler('getTrajectories')(app, { runId: 'x', limit: 10_000 })).rejects.toThrow(/limit/);
    await expect(handler('startRun')(app, { preset: 'seqgrpo-copy', sets: ['budget.steps=0'] })).rejects.toThrow(
      /budget\.steps: must be ≥ 1/,
    );
    await expect(handler('listRuns')(app, {})).resolves.toMatchObject({ runs: [] });
  });

  it('starts runs in a utilityProcess running the CLI run-worker, and stops them with kill', async () => {
    const app = sender(APP_FILE_URL);
    const started = handler('startRun')(app, { preset: 'seqgrpo-copy', sets: ['budget.steps=3'] });
    await vi.waitFor(() => expect(fake.FakeUtilityProcess.forked).toHaveLength(1));
    const { modulePath, args, options, child } = fake.FakeUtilityProcess.forked[0]!;
    expect(modulePath).toMatch(/engine[\\/]bin[\\/]mars-lab\.mjs$/);
    expect(args[0]).toBe('run-worker');
    expect(JSON.parse(args[1]!)).toMatchObject({
      kind: 'start',
      preset: 'seqgrpo-copy',
      config: { algorithm: 'seqgrpo', budget: { steps: 3 } },
    });
    // The worker takes its share of the cores for BLAS threads: one of the host's slots (issue 28).
    expect(args.slice(2)).toEqual(['--worker-slots', expect.stringMatching(/^[1-9]\d*$/)]);
    expect(options).toMatchObject({ stdio: 'pipe' });
    child.writeLine({ type: 'created', runId: 'r1', dir: '/x/runs/r1' });
    await expect(started).resolves.toEqual({ runId: 'r1' });
    await expect(handler('stopRun')(app, { runId: 'r1' })).resolves.toMatchObject({ stopping: true });
    expect(child.killed).toBe(true);
    for (const listener of child.exitListeners) listener(0);
  });

  it('tells the page the host is ready once it has loaded', () => {
    const contents = window().webContents;
    for (const listener of contents.listeners.get('did-finish-load') ?? []) listener();
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

  it("exposes exactly the contract's keys, all functions", () => {
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
