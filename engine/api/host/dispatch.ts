/**
 * One entry for every transport: check that the method exists, validate its request against the contract's schema,
 * call the host. Electron's IPC handlers and the web-mode socket both go through `callApi`, so the same request is
 * refused the same way whichever way it came.
 */
import { clip, withoutJsonQuotes } from '../../base/boundedText';
import { ConfigValidationError } from '../../runs/config/configSchema';
import { UserError } from '../../base/userError';
import { apiSchemas, isApiMethod, type ApiErrorPayload, type ApiMethod } from '../contract/contract';
import type { ApiHandlers } from './host';

/** A request the contract refuses: unknown method or invalid fields. */
export class ApiRequestError extends UserError {}

export function parseRequest(method: unknown, params: unknown): { method: ApiMethod; request: unknown } {
  if (!isApiMethod(method)) {
    throw new ApiRequestError(`'${String(method).slice(0, 60)}' is not a method of the mars-lab API`);
  }
  const parsed = apiSchemas[method].request.safeParse(params ?? {});
  if (!parsed.success) {
    // Bounded: a request may carry thousands of unknown keys, or keys megabytes long, that zod's messages name.
    const issues = parsed.error.issues;
    const problems = issues
      .slice(0, 10)
      .map((i) => `${clip(i.path.length ? i.path.join('.') : '(request)', 100)}: ${clip(i.message, 200)}`);
    if (issues.length > 10) problems.push(`and ${issues.length - 10} more`);
    throw new ApiRequestError(`${method}: invalid request (${problems.join('; ')})`);
  }
  return { method, request: parsed.data };
}

export async function callApi(handlers: ApiHandlers, method: unknown, params: unknown): Promise<unknown> {
  const { method: m, request } = parseRequest(method, params);
  const handler = handlers[m] as (request: unknown) => Promise<unknown>;
  try {
    return await handler(request);
  } catch (err) {
    throw unquoted(err);
  }
}

/**
 * The error a window gets, without a JSON parser's quotation of a file (V8's messages quote the text's first bytes,
 * and a message may wrap one: `… (${err.message})`), whichever transport carries it: IPC sends the message and the
 * web socket errorPayload's. The same error object, so its class and a config's issues are kept.
 */
function unquoted(err: unknown): unknown {
  if (!(err instanceof Error)) return typeof err === 'string' ? withoutJsonQuotes(err) : err;
  const message = withoutJsonQuotes(err.message);
  if (message !== err.message) {
    err.message = message;
    if (err.stack) err.stack = withoutJsonQuotes(err.stack);
  }
  return err;
}

/** What a failed call sends back: the message, and a config's issues by field when there are any. */
export function errorPayload(err: unknown): ApiErrorPayload {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof ConfigValidationError) return { message, issues: err.issues };
  return { message };
}
