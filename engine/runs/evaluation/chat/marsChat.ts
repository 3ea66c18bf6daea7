/**
 * MARS's instruction template for chat models (`"instructions": "chat"`): what a real model must be told to play
 * System 2 or System 1 (engine/mars/format.ts), and how its answers are read back into MARS's turns.
 *
 *   System 2   system message: the tag format (<think>, <purpose>, <search> or <answer>; <info> comes back) and one
 *              worked episode; then the question as the user's message, each earlier turn as the assistant's and
 *              each <info> block as the user's. Stops on </search> and </answer>.
 *   System 1   system message: distil the pages for the purpose, and one worked example; then the purpose and the
 *              pages of the bin as the user's message.
 *
 * The worked examples come from the first generated training world (seed parity 0: never an evaluation world, and
 * never a user's corpus); a question equal to the one asked is skipped. In System 2's last turn (only an answer
 * counts) the user's last message says so. Answers are read tolerantly: code fences,
 * prose around the turn and text after it are dropped, tag names are lower-cased, and the first closed <search> or
 * <answer> is the turn; an answer without one is kept as a malformed turn (it finds nothing, as in-process).
 *
 * With `natural` (generated worlds in an endpoint evaluation, issue 32) every text the model sees is prose
 * (naturalText.ts), what it writes is read back into the worlds' token form, and the worked example goes as chat turns
 * after the instructions instead of inline "User: … You: …" lines.
 */
import type { MarsFormat } from '../../../mars/format';
import { generateWorld, type World } from '../../../mars/world';
import { trainWorldSeeds } from '../../../mars/worldSplits';
import type { ChatDialect, ChatMessage, ChatReading, ChatRequest } from '../../../policy/endpointPolicy';
import { isPreamble, oneLine, stripFences, stripLabel } from './answerText';
import { fromNatural, toNatural } from './naturalText';

const TURN_TAGS = ['think', 'purpose', 'search', 'answer'] as const;

/** Added to the user's last message in System 2's last turn, where a search is not answered any more. */
export const FINAL_TURN = '(This is your last turn: no more searches; write your <answer> now.)';

interface Sys2Example {
  question: string;
  turn1: string;
  info: string;
  turn2: string;
  purpose: string;
  pages: string[];
  summary: string;
}

let world: World | null = null;
function exampleWorld(): World {
  return (world ??= generateWorld(trainWorldSeeds(0, 1)[0]!));
}

/** A worked single-hop episode from the training world, for a question other than `asked`. */
export function marsExample(asked: string): Sys2Example {
  const w = exampleWorld();
  const q = w.questions.find((x) => x.family === 'direct' && oneLine(x.text) !== oneLine(asked))!;
  const subject = w.entities.find((e) => e.id === q.chain[0]!.subject)!.name;
  const page = w.pages.find((p) => p.id === q.support[0])!;
  const sentences = page.text.split(/(?<=\s\.)\s+/);
  const fact =
    sentences.find((s) => s.includes(` ${q.answers[0]!} `) || s.includes(` ${q.answers[0]!}.`)) ?? sentences[0]!;
  const purpose = q.text.replace(/\s*\?$/, '');
  const other = w.pages.find((p) => p.id !== page.id && p.text.includes(subject)) ?? w.pages.find((p) => p !== page)!;
  return {
    question: q.text,
    turn1: `<think> i need the page about ${subject} </think> <purpose> ${purpose} </purpose> <search> ${subject} </search>`,
    info: `<info> ${fact} </info>`,
    turn2: `<think> the info answers the question </think> <answer> ${q.answers[0]!} </answer>`,
    purpose,
    pages: [page.text, other.text],
    summary: fact,
  };
}

/** A worked example's texts through `show` (toNatural for a real model on generated worlds). */
function shown(ex: Sys2Example, show: (t: string) => string): Sys2Example {
  return {
    question: show(ex.question),
    turn1: show(ex.turn1),
    info: show(ex.info),
    turn2: show(ex.turn2),
    purpose: show(ex.purpose),
    pages: ex.pages.map(show),
    summary: show(ex.summary),
  };
}

/** `inline` false: the instructions alone, the example going as turns of the chat (exampleTurns). */
export function sys2System(ex: Sys2Example, inline = true): string {
  const lines = [
    'You answer questions by searching an encyclopedia, writing in a strict tag format. Each reply of yours is exactly one turn, either',
    '<think> your reasoning </think> <purpose> what the search should find out </purpose> <search> a few keywords </search>',
    'or, once you know the answer,',
    '<think> your reasoning </think> <answer> the answer: a name, a place or a year </answer>',
    'After a search the user replies <info> … </info>: what a helper read for your purpose in the pages found (summaries of different pages are separated by <sep>; <noresults> means nothing was found). Keep <think> to a few words (each turn has a small token budget), write nothing outside the tags, no Markdown, and stop after </search> or </answer>.',
    '',
    'Example.',
    `User: ${ex.question}`,
    `You: ${ex.turn1}`,
    `User: ${ex.info}`,
    `You: ${ex.turn2}`,
  ];
  return (inline ? lines : lines.slice(0, lines.indexOf(''))).join('\n');
}

export function sys1System(ex: Sys2Example, inline = true): string {
  const lines = [
    'You read pages for a search agent that cannot see them. The user gives the purpose of a search and the pages it returned. Reply with one or two short sentences stating only what the pages say that serves the purpose (names, places and years as the pages write them), or "nothing relevant" when they say nothing about it. No preamble, no tags, no Markdown.',
    '',
    'Example.',
    `User: ${sys1User(ex.purpose, ex.pages)}`,
    `You: ${ex.summary}`,
  ];
  return (inline ? lines : lines.slice(0, lines.indexOf(''))).join('\n');
}

/**
 * The worked example as turns of the chat itself, after the instructions: how a real model on generated worlds gets it
 * (SmolLM2-135M given the inline "User: … You: …" lines went on writing "you: <the example's summary>" for other pages).
 */
function exampleTurns(system: 'sys1' | 'sys2', ex: Sys2Example): ChatMessage[] {
  if (system === 'sys1') {
    return [
      { role: 'user', content: sys1User(ex.purpose, ex.pages) },
      { role: 'assistant', content: ex.summary },
    ];
  }
  return [
    { role: 'user', content: ex.question },
    { role: 'assistant', content: ex.turn1 },
    { role: 'user', content: ex.info },
    { role: 'assistant', content: ex.turn2 },
  ];
}

export function sys1User(purpose: string, pages: readonly string[]): string {
  return [`purpose: ${purpose}`, 'pages:', ...pages.map((p, i) => `[${i + 1}] ${p}`)].join('\n');
}

/** Tag names as MARS writes them (`<Search >` → `<search>`). */
function canonicalTags(text: string): string {
  return text.replace(
    new RegExp(`<\\s*(\\/?)\\s*(${TURN_TAGS.join('|')}|info)\\s*>`, 'gi'),
    (_m, slash: string, tag: string) => `<${slash}${tag.toLowerCase()}>`,
  );
}

/** Any MARS tag out of a span's text (a span holds words only). */
function untagged(text: string): string {
  return oneLine(text.replace(/<\/?[a-z0-9]+>/gi, ' '));
}

/** The identity: text the run's tokens hold as written. */
const asIs = (t: string): string => t;

/** System 2's turn from a chat answer (see the header); `back` takes span texts to the run's form. */
export function readSys2(answer: string, finish: 'stop' | 'length', back = asIs): ChatReading {
  const repairs: string[] = [];
  const fenced = stripFences(answer);
  if (fenced.stripped) repairs.push('code fence stripped');
  const tagged = canonicalTags(fenced.text);
  if (tagged !== fenced.text) repairs.push('tag names normalised');
  let text = tagged;
  let m = /<(search|answer)>([\s\S]*?)<\/\1>/.exec(text);
  if (!m && finish === 'stop') {
    // the server stopped on </search> or </answer> and dropped it: the last open tag is the turn
    const open = /<(search|answer)>(?![\s\S]*<\/?(?:search|answer)>)([\s\S]*)$/.exec(text);
    if (open) {
      text = `${text} </${open[1]!}>`;
      m = /<(search|answer)>([\s\S]*?)<\/\1>/.exec(text);
    }
  }
  if (!m) {
    repairs.push('no closed <search> or <answer>: kept as a malformed turn');
    const body = back(untagged(text));
    return { text: finish === 'stop' ? `${body} <eos>` : body, repairs };
  }
  const before = text.slice(0, m.index);
  const after = text.slice(m.index + m[0].length);
  const span = (tag: string): string | null => {
    const all = [...before.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))];
    return all.length ? back(untagged(all.at(-1)![1]!)) : null;
  };
  const think = span('think');
  const purpose = span('purpose');
  const prose = before.replace(/<(think|purpose)>[\s\S]*?<\/\1>/g, ' ');
  if (prose.trim() !== '') repairs.push('prose around the turn dropped');
  if (after.trim() !== '') repairs.push('text after the turn dropped');
  const kind = m[1]!;
  const parts = [
    ...(think !== null ? [`<think> ${think} </think>`] : []),
    ...(purpose !== null ? [`<purpose> ${purpose} </purpose>`] : []),
    `<${kind}> ${back(untagged(m[2]!))} </${kind}>`,
  ];
  return { text: parts.join(' '), repairs };
}

/** System 1's distillation from a chat answer: the text alone, one line, no tags, then <eos>. */
export function readSys1(answer: string, finish: 'stop' | 'length', back = asIs): ChatReading {
  const repairs: string[] = [];
  const fenced = stripFences(answer);
  if (fenced.stripped) repairs.push('code fence stripped');
  let lines = fenced.text.split('\n').filter((l) => l.trim() !== '');
  if (lines.length > 1 && isPreamble(lines[0]!)) {
    lines = lines.slice(1);
    repairs.push('preamble dropped');
  }
  const labelled = lines.length ? stripLabel(lines[0]!) : { text: '', stripped: false };
  if (labelled.stripped) {
    lines = [labelled.text, ...lines.slice(1)];
    repairs.push('label dropped');
  }
  const joined = oneLine(lines.join(' '));
  const plain = untagged(joined);
  if (plain !== joined) repairs.push('tags removed');
  const body = back(plain);
  return { text: finish === 'stop' ? `${body} <eos>` : body, repairs };
}

/**
 * MARS's dialect over `format` (the run's MARS tokenizer): System 2 and System 1 prompts, by their second token.
 * `natural`: the generated worlds' token-form text is shown as prose and answers are read back to it (naturalText.ts).
 */
export function marsChat(format: MarsFormat, o: { natural?: boolean } = {}): ChatDialect {
  const { ids } = format;
  const tok = format.tokenizer;
  const show = o.natural ? toNatural : asIs;
  const back = o.natural ? fromNatural : asIs;
  const text = (xs: readonly number[]): string => show(tok.decode(xs));
  return {
    chat(prompt: readonly number[], hints: { final?: boolean } = {}): ChatRequest | null {
      if (prompt[0] !== ids.bos) return null;
      const sep = prompt.indexOf(ids.sep);
      if (sep < 0) return null;
      if (prompt[1] === ids.sys2) {
        const question = text(prompt.slice(2, sep));
        const ex = shown(marsExample(tok.decode(prompt.slice(2, sep))), show);
        const messages: ChatMessage[] = [
          { role: 'system', content: sys2System(ex, !o.natural) },
          ...(o.natural ? exampleTurns('sys2', ex) : []),
          { role: 'user', content: question },
        ];
        // the turns so far: assistant text up to each <info>, the <info> block as the user's reply
        let i = sep + 1;
        while (i < prompt.length) {
          const info = prompt.indexOf(ids.info, i);
          const end = info < 0 ? prompt.length : info;
          if (end > i) messages.push({ role: 'assistant', content: text(prompt.slice(i, end)) });
          if (info < 0) break;
          const close = prompt.indexOf(ids.infoEnd, info);
          const stop = close < 0 ? prompt.length : close + 1;
          messages.push({ role: 'user', content: text(prompt.slice(info, stop)) });
          i = stop;
        }
        if (hints.final) {
          const last = messages.at(-1)!;
          last.content += `\n${FINAL_TURN}`;
        }
        return {
          messages,
          stop: [tok.tokenOf(ids.searchEnd), tok.tokenOf(ids.answerEnd)],
          read: (answer, finish) => readSys2(answer, finish, back),
        };
      }
      if (prompt[1] === ids.sys1) {
        const purpose = text(prompt.slice(2, sep));
        const ex1 = shown(marsExample(''), show);
        const pages: string[] = [];
        let i = sep + 1;
        while (i < prompt.length) {
          const next = prompt.indexOf(ids.sep, i);
          const end = next < 0 ? prompt.length : next;
          if (end > i) pages.push(text(prompt.slice(i, end)));
          i = end + 1;
        }
        return {
          messages: [
            { role: 'system', content: sys1System(ex1, !o.natural) },
            ...(o.natural ? exampleTurns('sys1', ex1) : []),
            { role: 'user', content: sys1User(purpose, pages) },
          ],
          stop: [],
          read: (answer, finish) => readSys1(answer, finish, back),
        };
      }
      return null;
    },
  };
}
