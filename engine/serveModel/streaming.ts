/**
 * How serve-model runs one job on the generation queue (batcher.ts): whole, for a plain answer, or streamed as
 * server-sent events (`data: {chunk}` lines, then `data: [DONE]`). Tokens go out as they are drawn; a stop token is
 * held back until the end decides whether the client sees it, and with stop strings everything waits for the end (a
 * stop string's first tokens must not have been sent). A closed connection aborts the row.
 */
import type http from 'node:http';
import type { GenerationQueue, GenerationRequest, GenerationResult, TopToken } from './batcher';
import type { Job, jobMaker } from './jobs';

/** What a route makes of a piece of the answer: the chunk object sent as one event. */
export type ChunkOf = (
  piece: string,
  ids: number[],
  lps: number[],
  tops: TopToken[][],
  finish: string | null,
  stopReason: unknown,
) => unknown;

/** What running a job needs: the queue, the tokenizer's decode, and what the client sees of a result. */
export interface JobRunner {
  queue: GenerationQueue;
  decode: (ids: number[], skipSpecial?: boolean) => string;
  visible: ReturnType<typeof jobMaker>['visible'];
}

/** Runs `job`; with `stream` its answer is written to `res` as events made by `chunk`. */
export async function runJob(
  runner: JobRunner,
  job: Job,
  res: http.ServerResponse,
  stream: boolean,
  chunk: ChunkOf,
): Promise<GenerationResult> {
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  const ask = {
    prompt: job.prompt,
    maxTokens: job.maxTokens,
    temperature: job.temperature,
    topP: job.topP,
    stopIds: job.stop.ids,
    stopStrings: job.stop.strings,
    seed: job.seed,
    topLogprobs: job.topK,
    signal: abort.signal,
  };
  if (!stream) return runner.queue.submit(ask);
  return streamJob(runner, job, ask, res, chunk);
}

async function streamJob(
  { queue, decode, visible }: JobRunner,
  job: Job,
  ask: GenerationRequest,
  res: http.ServerResponse,
  chunk: ChunkOf,
): Promise<GenerationResult> {
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-store',
    // No Connection header of its own: Node answers keep-alive, or close when the request said `Connection: close`.
    'X-Accel-Buffering': 'no',
  });
  const write = (obj: unknown): void => void res.write(`data: ${JSON.stringify(obj)}\n\n`);
  // Tokens go out as they are drawn; a stop token is held back until we know whether the client wants it, and with
  // stop strings everything waits for the end (a stop string's first tokens must not have been sent).
  const sent: number[] = [];
  let sentText = '';
  const flush = (
    ids: number[],
    lps: number[],
    tops: TopToken[][],
    upTo: number,
    finish: string | null,
    stopReason: unknown,
  ): void => {
    const newIds = ids.slice(sent.length, upTo);
    const newLps = lps.slice(sent.length, upTo);
    const newTops = tops.slice(sent.length, upTo);
    const full = decode(ids.slice(0, upTo), job.skipSpecial);
    const piece = full.startsWith(sentText) ? full.slice(sentText.length) : '';
    if (newIds.length === 0 && finish === null) return;
    sent.push(...newIds);
    sentText = full.startsWith(sentText) ? full : sentText;
    write(chunk(piece, newIds, newLps, newTops, finish, stopReason));
  };
  const all: number[] = [];
  const allLps: number[] = [];
  const allTops: TopToken[][] = [];
  const g = await queue.submit({
    ...ask,
    onToken: (id, lp, top) => {
      all.push(id);
      allLps.push(lp);
      if (top) allTops.push(top);
      if (job.stop.strings.length === 0 && !job.stop.ids.includes(id)) {
        flush(all, allLps, allTops, all.length, null, null);
      }
    },
  });
  const v = visible(job, g);
  const upTo = v.ids.length;
  if (job.stop.strings.length > 0 && g.finish === 'stop' && !job.includeStop) {
    // the stop string is cut from the text: send the text, then the last chunk
    const text = v.text;
    const piece = text.startsWith(sentText) ? text.slice(sentText.length) : '';
    write(
      chunk(
        piece,
        v.ids.slice(sent.length),
        v.logProbs.slice(sent.length),
        v.tops.slice(sent.length),
        v.finish,
        g.stopReason,
      ),
    );
  } else flush(v.ids, v.logProbs, v.tops, upTo, v.finish, g.stopReason);
  res.write('data: [DONE]\n\n');
  res.end();
  return g;
}
