/**
 * A chat template is vetted before it is used: rendered on probe conversations in a worker thread with bounded time
 * and heap, so a template from a model's files that loops (`{% for i in range(10**9) %}`), prints megabytes or raises
 * is refused at load in one line, and the process that loaded it keeps running. Jinja has no while loop and no
 * recursion without macros, so a template whose probes finish within the bounds renders a conversation of the same
 * shape in time proportional to it; chatTemplate.ts bounds every later render's size as well.
 *
 * The probe also tells which roles a template accepts (`model info`): a role counts when a conversation holding a turn
 * of it renders without error and the turn's text appears in the output.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { ChatTemplateError, MAX_RENDERED_CHARS, PROBED_ROLES, type TemplateTokens } from './chatTemplate';

export interface ProbeLimits {
  timeoutMs: number;
  heapMb: number;
}

/** A real template renders a probe in well under a millisecond; these bounds leave three orders of magnitude. */
export const PROBE_LIMITS: ProbeLimits = { timeoutMs: 5000, heapMb: 256 };

export interface ProbeResult {
  /** Roles whose turns the template renders (of PROBED_ROLES). */
  roles: string[];
  /** Whether add_generation_prompt adds text after the conversation. */
  generationPrompt: boolean;
}

/** CommonJS run by the worker: renders the probes and posts what it found (or the first line of the first error). */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { Template } = require(workerData.jinja);
const { source, tokens, roles, maxChars } = workerData;
const vars = { bos_token: tokens.bos_token || '', eos_token: tokens.eos_token || '', unk_token: tokens.unk_token || '',
  pad_token: tokens.pad_token || '' };
function render(t, messages, add) {
  const text = t.render({ ...vars, messages, add_generation_prompt: add });
  if (typeof text !== 'string') throw new Error('the template rendered no text');
  if (text.length > maxChars) throw new Error('the template rendered ' + text.length + ' characters for a probe of ' + messages.length + ' messages');
  return text;
}
try {
  const t = new Template(source);
  const base = [{ role: 'user', content: 'probe-user-0' }, { role: 'assistant', content: 'probe-assistant-0' }];
  const plain = render(t, base, false);
  const prompted = render(t, base.slice(0, 1), true);
  const accepted = [];
  for (const role of roles) {
    const text = 'probe-' + role + '-1';
    const messages = role === 'system' ? [{ role, content: text }, ...base] : [...base, { role, content: text }];
    try { if (render(t, messages, false).includes(text)) accepted.push(role); } catch (e) { /* not this role */ }
  }
  const bare = render(t, base.slice(0, 1), false);
  parentPort.postMessage({ ok: true, roles: accepted, generationPrompt: prompted.length > bare.length && plain.length > 0 });
} catch (e) {
  parentPort.postMessage({ ok: false, error: String((e && e.message) || e).split('\\n')[0].slice(0, 200) });
}
`;

type WorkerAnswer = { ok: true; roles: string[]; generationPrompt: boolean } | { ok: false; error: string };

/** Renders the probes in a worker; refuses, naming `origin`, a template that fails, loops or grows past the bounds. */
export async function probeTemplate(
  source: string,
  tokens: TemplateTokens,
  origin: string,
  limits: ProbeLimits = PROBE_LIMITS,
): Promise<ProbeResult> {
  const jinja = createRequire(import.meta.url).resolve('@huggingface/jinja');
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { jinja, source, tokens, roles: [...PROBED_ROLES], maxChars: MAX_RENDERED_CHARS },
    resourceLimits: { maxOldGenerationSizeMb: limits.heapMb, maxYoungGenerationSizeMb: 32 },
    stdout: true,
    stderr: true,
  });
  const answer = await new Promise<WorkerAnswer | string>((resolve) => {
    const timer = setTimeout(
      () => resolve(`did not finish rendering a probe within ${limits.timeoutMs} ms`),
      limits.timeoutMs,
    );
    const done = (v: WorkerAnswer | string) => {
      clearTimeout(timer);
      resolve(v);
    };
    worker.once('message', (m: WorkerAnswer) => done(m));
    worker.once('error', (err: Error & { code?: string }) =>
      done(
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? `needed more than ${limits.heapMb} MiB to render a probe`
          : (err.message.split('\n')[0] ?? 'failed'),
      ),
    );
    worker.once('exit', (code) => done(`stopped (exit code ${code}) while rendering a probe`));
  });
  await worker.terminate();
  if (typeof answer === 'string') throw new ChatTemplateError(`${origin}: the chat template ${answer}`);
  if (!answer.ok) {
    throw new ChatTemplateError(`${origin}: the chat template failed on a probe conversation (${answer.error})`);
  }
  return { roles: answer.roles, generationPrompt: answer.generationPrompt };
}
