/**
 * A client of the Ray Jobs REST API on a head node's dashboard port (default 8265): version, submit, status, list,
 * full logs, stop (docs/scale-out.md §1), and the package API a runtime_env working_dir is uploaded through
 * (`GET`/`PUT /api/packages/gcs/_ray_pkg_<hash>.zip`, as Ray's own SDK does it), over node:http/https. Not Node's
 * fetch: it always sends `Sec-Fetch-Mode: cors`, and Ray's dashboard refuses every POST that carries a Sec-Fetch-*
 * header as "browser traffic" (405; ray/dashboard/optional_utils.py is_browser_request), so fetch could never submit
 * or stop a job.
 * `Authorization: Bearer` when given a token (option, else env MARS_LAB_RAY_TOKEN: Ray ≥ 2.52 token mode), plus any
 * custom headers (an authenticating proxy's). Every response is parsed with zod (jobsSchemas.ts).
 *
 * Faults become one-line RayErrors (UserErrors: exit code 2): an unreachable cluster, a URL that is not a Ray
 * dashboard, a 4xx/5xx (Ray's errors are plain text, often a Python traceback: the last "…Error: …" line is shown),
 * an unknown job, a submission id that exists, a missing or wrong token.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { z } from 'zod';
import { UserError } from '../../base/userError';
import {
  jobDetailsSchema,
  jobListSchema,
  logsSchema,
  stopResponseSchema,
  submitRequestSchema,
  submitResponseSchema,
  versionSchema,
  type RayJobDetails,
  type RaySubmitRequest,
  type RayVersion,
} from './jobsSchemas';

export const RAY_TOKEN_ENV = 'MARS_LAB_RAY_TOKEN';

export type RayErrorKind = 'unreachable' | 'not-ray' | 'http' | 'not-found' | 'duplicate' | 'auth';

export class RayError extends UserError {
  constructor(
    message: string,
    readonly kind: RayErrorKind,
    readonly status?: number,
    /** 'unreachable' because the connection was reset under the request (it may have reached Ray). */
    readonly reset = false,
  ) {
    super(message);
  }
}

export interface RayClientOptions {
  /** The dashboard's address, e.g. http://127.0.0.1:8265 (a path prefix behind a proxy is kept). */
  url: string;
  /** Bearer token (Ray token mode); default: $MARS_LAB_RAY_TOKEN. */
  token?: string;
  /** Extra request headers, e.g. a proxy's. */
  headers?: Record<string, string>;
  /** A PEM file of the CA that signed an https dashboard's (or proxy's) certificate. */
  caFile?: string;
  /** Per request; default 30 s. */
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** `--ray URL` checked: http(s) only, no trailing slash. */
export function parseRayUrl(url: string): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new RayError(
      `--ray: "${url}" is not a URL; give the dashboard's address, e.g. http://127.0.0.1:8265`,
      'not-ray',
    );
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new RayError(
      `--ray: "${url}" is not an http(s) URL; give the dashboard's address, e.g. http://127.0.0.1:8265 (not the GCS port 6379 or ray://)`,
      'not-ray',
    );
  }
  u.pathname = u.pathname.replace(/\/+$/, '');
  u.search = '';
  u.hash = '';
  return u;
}

/** One line out of Ray's plain-text error body: the last "SomethingError: message" line of a traceback, else the first line. */
export function rayErrorLine(body: string): string {
  const lines = body
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && l !== '.');
  const raised = lines.findLast((l) => /^[A-Za-z_][\w.]*(Error|Exception)\b[^:]*: /.test(l));
  const line = (raised ?? lines[0] ?? '(empty body)').replace(/\s+/g, ' ');
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

/** Why a request failed, in a few words (ECONNREFUSED, ENOTFOUND, a TLS complaint, …). */
/** The waits before asking a reset GET again. */
const RESET_RETRY_MS = [300, 1000];

/** Whether a network fault was the connection reset under the request (not a refused or timed-out one). */
function wasReset(err: unknown): boolean {
  const e = err as NodeJS.ErrnoException;
  return e?.code === 'ECONNRESET' || e?.code === 'EPIPE' || /socket hang up/i.test(e?.message ?? '');
}

function networkReason(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'ETIMEDOUT') return 'no answer in time';
  return [e?.code, e?.message].filter(Boolean).join(': ') || String(err);
}

/** One HTTP exchange; the body is read whole (Ray's answers are small, the full log aside). */
function exchange(
  url: string,
  opts: { method: string; headers: Record<string, string>; body?: string | Buffer; ca?: Buffer; timeoutMs: number },
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const mod = u.protocol === 'https:' ? https : http;
    const req = mod.request(
      u,
      { method: opts.method, headers: opts.headers, ...(opts.ca ? { ca: opts.ca } : {}), timeout: opts.timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error('no answer in time'), { code: 'ETIMEDOUT' })));
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** `gcs://_ray_pkg_<hash>.zip` as the package API's route, `/api/packages/gcs/_ray_pkg_<hash>.zip` (Ray's
 * uri_to_http_components). */
export function packageRoute(uri: string): string {
  const m = /^(gcs):\/\/([A-Za-z0-9_.-]+\.zip)$/.exec(uri);
  if (!m) throw new Error(`not a gcs:// package URI: ${uri}`);
  return `/api/packages/${m[1]}/${m[2]}`;
}

export class RayJobsClient {
  readonly base: URL;
  readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  readonly ca?: Buffer;

  constructor(opts: RayClientOptions) {
    this.base = parseRayUrl(opts.url);
    const token = opts.token ?? (opts.env ?? process.env)[RAY_TOKEN_ENV];
    this.headers = { ...(opts.headers ?? {}) };
    if (token) this.headers.authorization = `Bearer ${token.trim()}`;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    if (opts.caFile) {
      const caFile = opts.caFile;
      try {
        this.ca = fs.readFileSync(caFile);
      } catch (err) {
        throw new UserError(
          `--ray-ca ${caFile}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); give a PEM file`,
        );
      }
    }
  }

  /** The address shown in messages. */
  get where(): string {
    return this.base.href.replace(/\/$/, '');
  }

  url(route: string): string {
    return `${this.base.href.replace(/\/$/, '')}${route}`;
  }

  /** The WebSocket address of a route (ws: for http:, wss: for https:). */
  wsUrl(route: string): string {
    return this.url(route).replace(/^http/, 'ws');
  }

  /**
   * One exchange; a network fault is an 'unreachable' RayError, any status comes back as it is. A GET whose connection
   * was reset (a dashboard under load drops one now and then: ECONNRESET, "socket hang up") is asked again, twice at
   * most; a reset POST is the caller's to settle (submit: the job may exist).
   */
  private async send(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    route: string,
    body?: { data: string | Buffer; type: string },
  ): Promise<{ status: number; text: string }> {
    const headers: Record<string, string> = { accept: 'application/json', ...this.headers };
    if (body !== undefined) {
      headers['content-type'] = body.type;
      headers['content-length'] = String(Buffer.byteLength(body.data));
    }
    const ask = () =>
      exchange(this.url(route), { method, headers, body: body?.data, ca: this.ca, timeoutMs: this.timeoutMs });
    try {
      for (const wait of method === 'GET' ? RESET_RETRY_MS : []) {
        try {
          return await ask();
        } catch (err) {
          if (!wasReset(err)) throw err;
          await new Promise((r) => setTimeout(r, wait));
        }
      }
      return await ask();
    } catch (err) {
      throw new RayError(
        `Ray cluster at ${this.where} is unreachable (${networkReason(err)}): is the head running and is this its dashboard port? (a remote head: ssh -N -L 8265:127.0.0.1:8265 HEAD, then --ray http://127.0.0.1:8265)`,
        'unreachable',
        undefined,
        wasReset(err),
      );
    }
  }

  /** The RayError for a status outside 2xx (Ray's errors are plain text). */
  private failure(res: { status: number; text: string }, method: string, route: string, job?: string): RayError {
    const line = rayErrorLine(res.text);
    if (res.status === 401 || res.status === 403) {
      return new RayError(
        `Ray at ${this.where} refused the request (${res.status}: ${line}): ${this.headers.authorization ? 'the token is wrong' : 'it wants a token'}; set ${RAY_TOKEN_ENV} or --ray-token (ray get-auth-token prints it)`,
        'auth',
        res.status,
      );
    }
    if (res.status === 404 && job !== undefined && /does not exist/i.test(res.text)) {
      return new RayError(
        `no job '${job}' on the Ray cluster at ${this.where} (list them: mars-lab jobs ls --ray ${this.where})`,
        'not-found',
        404,
      );
    }
    if (res.status === 404) {
      return new RayError(
        `${this.where} has no ${method} ${route} (HTTP 404, "${line}"): is this a Ray dashboard's address (http://HEAD:8265)?`,
        'not-ray',
        404,
      );
    }
    if (/submission_id \S+ already exists/.test(res.text)) {
      return new RayError(
        `a job with submission id '${job}' already exists on ${this.where}: choose another run id, or follow that job (mars-lab jobs logs ${job} --ray ${this.where})`,
        'duplicate',
        res.status,
      );
    }
    return new RayError(
      `Ray at ${this.where} answered ${res.status} to ${method} ${route}: ${line}`,
      'http',
      res.status,
    );
  }

  private async request<T>(
    method: 'GET' | 'POST' | 'DELETE',
    route: string,
    schema: z.ZodType<T>,
    body?: unknown,
    job?: string,
  ): Promise<T> {
    const res = await this.send(
      method,
      route,
      body === undefined ? undefined : { data: JSON.stringify(body), type: 'application/json' },
    );
    if (res.status < 200 || res.status > 299) throw this.failure(res, method, route, job);
    const text = res.text;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new RayError(
        `${this.where} answered ${method} ${route} with something that is not JSON ("${rayErrorLine(text).slice(0, 80)}"): is this a Ray dashboard's address?`,
        'not-ray',
        res.status,
      );
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new RayError(
        `${this.where} answered ${method} ${route} in an unexpected shape (${issue ? `${issue.path.join('.') || 'body'}: ${issue.message}` : 'invalid'}): is this a Ray ≥ 2.9 dashboard?`,
        'not-ray',
        res.status,
      );
    }
    return parsed.data;
  }

  version(): Promise<RayVersion> {
    return this.request('GET', '/api/version', versionSchema);
  }

  async submit(req: RaySubmitRequest): Promise<string> {
    const body = submitRequestSchema.parse(req);
    try {
      return (await this.request('POST', '/api/jobs/', submitResponseSchema, body, req.submission_id)).submission_id;
    } catch (err) {
      // A reset connection may come after Ray made the job: it exists under its id, or the submission is made again.
      const id = req.submission_id;
      if (!(err instanceof RayError && err.kind === 'unreachable' && err.reset) || !id) throw err;
      try {
        await this.job(id);
        return id;
      } catch (missing) {
        if (!(missing instanceof RayError && missing.kind === 'not-found')) throw err;
      }
      return (await this.request('POST', '/api/jobs/', submitResponseSchema, body, id)).submission_id;
    }
  }

  job(id: string): Promise<RayJobDetails> {
    return this.request('GET', `/api/jobs/${encodeURIComponent(id)}`, jobDetailsSchema, undefined, id);
  }

  list(): Promise<RayJobDetails[]> {
    return this.request('GET', '/api/jobs/', jobListSchema);
  }

  async logs(id: string): Promise<string> {
    return (await this.request('GET', `/api/jobs/${encodeURIComponent(id)}/logs`, logsSchema, undefined, id)).logs;
  }

  /** Whether a package (`gcs://_ray_pkg_<hash>.zip`) is in the cluster's store; asking pins it there for a while. */
  async packageExists(uri: string): Promise<boolean> {
    const route = packageRoute(uri);
    const res = await this.send('GET', route);
    if (res.status === 200) return true;
    if (res.status === 404 && /does not exist/i.test(res.text)) return false;
    throw this.failure(res, 'GET', route);
  }

  /** Uploads a package's zip bytes under its URI (the dashboard stores it in the GCS for runtime_env working_dir). */
  async uploadPackage(uri: string, zip: Buffer): Promise<void> {
    const route = packageRoute(uri);
    const res = await this.send('PUT', route, { data: zip, type: 'application/zip' });
    if (res.status !== 200) throw this.failure(res, 'PUT', route);
  }

  async stop(id: string): Promise<boolean> {
    return (await this.request('POST', `/api/jobs/${encodeURIComponent(id)}/stop`, stopResponseSchema, undefined, id))
      .stopped;
  }
}
