/**
 * The chat playground's host side (issue 33, item 2). A model is talked to through `mars-lab serve-model` started for
 * it as a child process (through the host's launcher, as run workers are), so the playground's replies are exactly
 * what serve-model answers any OpenAI client: the model's own chat template, its end-of-turn token, streaming, and a
 * row cancelled when its connection closes. One model server at a time: picking another model stops the previous
 * one; the host's close stops it too.
 *
 * chatStart answers at once with a chat id; the reply follows as 'chatDelta' events (text and the tokens it carries,
 * counted from the stream's per-token log-prob entries) and one 'chatEnd' (finish, tokens, tokens per second from the
 * first token on, or the one-line error: a model without a chat template is refused before any server starts, a
 * model that cannot load says why). chatStop aborts
 * the request, which closes the connection; serve-model then drops the row.
 */
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { UserError } from '../../base/userError';
import { loadTaskFile } from '../../code/tasks/taskFile';
import { CATALOGUE } from '../../fetch/catalogue';
import { cachedArtefactPath } from '../../fetch/fetchArtefact';
import { describeModel } from '../../model/modelInfo';
import { labPrompts } from '../../runs/evaluation/chat/labPrompts';
import type { ApiParsedRequest } from '../contract/contract';
import type { RunLauncher, RunProcess } from '../workers/runLauncher';
import type { ApiHandlers } from './host';
import type { HostContext } from './hostContext';
import { locateModel } from './modelMethods';

/** A model server that has not printed its address by then is taken as failed (loading a 1B model takes ~30 s). */
const START_TIMEOUT_MS = 300_000;

interface ModelServer {
  id: string;
  proc: RunProcess;
  /** Its address, model id and the key it generated and printed. */
  ready: Promise<{ baseUrl: string; model: string; token: string }>;
}

export interface ChatHost {
  handlers: Pick<ApiHandlers, 'chatStart' | 'chatStop' | 'labPrompts'>;
  close(): void;
}

/** `mars-lab serve-model` for the model at `where`, ready once it prints its address and key. */
function launchModelServer(launcher: RunLauncher, id: string, where: string, onGone: () => void): ModelServer {
  let stderr = '';
  let proc: RunProcess;
  const ready = new Promise<{ baseUrl: string; model: string; token: string }>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new UserError(`${id}: the model server did not start in 5 minutes`)),
      START_TIMEOUT_MS,
    );
    proc = launcher.launch(
      ['serve-model', '--checkpoint', where, '--port', '0', '--json', '--model-name', 'playground'],
      {
        onStdoutLine(line) {
          if (!line.startsWith('{')) return;
          try {
            const info = JSON.parse(line) as { baseUrl?: string; model?: string; token?: string };
            if (info.baseUrl && info.token) {
              clearTimeout(timer);
              resolve({ baseUrl: info.baseUrl, model: info.model ?? 'playground', token: info.token });
            }
          } catch {
            // not the address line
          }
        },
        onStderr(text) {
          stderr = (stderr + text).slice(-4000);
        },
        onExit(code) {
          clearTimeout(timer);
          const last = stderr.trim().split('\n').at(-1) ?? '';
          reject(
            new UserError(last ? last.replace(/^mars-lab: (error: )?/, '') : `the model server ended (exit ${code})`),
          );
          onGone();
        },
      },
    );
  });
  ready.catch(() => {}); // a failure is reported by the chat that waits on it
  return { id, proc: proc!, ready };
}

export function createChatHost(ctx: HostContext, launcher: RunLauncher): ChatHost {
  let server: ModelServer | null = null;
  const running = new Map<string, AbortController>();

  function stopServer(): void {
    server?.proc.terminate();
    server = null;
  }

  function serverFor(id: string, where: string): ModelServer {
    if (server?.id === id) return server;
    stopServer();
    const started = launchModelServer(launcher, id, where, () => {
      if (server === started) server = null;
    });
    server = started;
    return started;
  }

  async function reply(chatId: string, req: ApiParsedRequest<'chatStart'>, abort: AbortController): Promise<void> {
    const t0 = performance.now();
    let first: number | null = null;
    let tokens = 0;
    const end = (finish: 'stop' | 'length' | 'stopped' | 'error', message = '') => {
      const seconds = (performance.now() - t0) / 1000;
      const streamed = first === null ? 0 : (performance.now() - first) / 1000;
      ctx.broadcast({
        type: 'chatEnd',
        chatId,
        finish,
        tokens,
        seconds,
        tokensPerSecond: tokens > 1 && streamed > 0 ? (tokens - 1) / streamed : null,
        message,
      });
    };
    try {
      const where = await locateModel(ctx, req.id);
      if (!(await describeModel(where)).chatTemplate) {
        return end(
          'error',
          `${req.id} has no chat template: the playground talks through a model's own template (for raw text, \`mars-lab model generate --prompt\`)`,
        );
      }
      const s = serverFor(req.id, where);
      const { baseUrl, model, token } = await s.ready;
      if (abort.signal.aborted) return end('stopped');
      const client = new OpenAI({ baseURL: baseUrl, apiKey: token, maxRetries: 0, timeout: 3_600_000 });
      const messages = [
        ...(req.system.trim() ? [{ role: 'system' as const, content: req.system }] : []),
        ...req.messages,
      ];
      const stream = await client.chat.completions.create(
        {
          model,
          messages,
          temperature: req.temperature,
          top_p: req.topP,
          max_tokens: req.maxTokens,
          stream: true,
          logprobs: true,
        },
        { signal: abort.signal },
      );
      let finish: 'stop' | 'length' = 'stop';
      for await (const chunk of stream) {
        const choice = chunk.choices[0];
        if (!choice) continue;
        const text = choice.delta?.content ?? '';
        const n = choice.logprobs?.content?.length ?? (text ? 1 : 0);
        if (n > 0 && first === null) first = performance.now();
        tokens += n;
        if (text || n) ctx.broadcast({ type: 'chatDelta', chatId, text, tokens });
        if (choice.finish_reason) finish = choice.finish_reason === 'length' ? 'length' : 'stop';
      }
      end(abort.signal.aborted ? 'stopped' : finish);
    } catch (err) {
      if (abort.signal.aborted) return end('stopped');
      const message = err instanceof Error ? err.message : String(err);
      end('error', message.split('\n')[0]!.replace(/^\d{3} /, ''));
    } finally {
      running.delete(chatId);
    }
  }

  return {
    handlers: {
      async chatStart(req) {
        const chatId = randomUUID();
        const abort = new AbortController();
        running.set(chatId, abort);
        void reply(chatId, req, abort);
        return { chatId };
      },
      async labPrompts() {
        const humaneval = CATALOGUE.find((a) => a.kind === 'data' && a.name === 'humaneval');
        const file = humaneval ? await cachedArtefactPath(humaneval) : undefined;
        return { prompts: labPrompts(file ? loadTaskFile(file)[0] : undefined) };
      },
      async chatStop({ chatId }) {
        const abort = running.get(chatId);
        abort?.abort();
        return { stopped: abort !== undefined };
      },
    },
    close() {
      for (const a of running.values()) a.abort();
      stopServer();
    },
  };
}
