/**
 * The generated worlds' text as a real chat model reads it, and its answers back in the worlds' token form (issue 32,
 * "MARS with a System 1 that can write": the worlds rendered as natural sentences).
 *
 * A world's text (engine/mars/world.ts) is lower-case words and punctuation marks separated by single spaces, with
 * years as four digit tokens: "krorabrur was born in the year 1 8 7 2 ." A pretrained model reads that as noise, so
 * `toNatural` writes it as prose: "Krorabrur was born in the year 1872." (digit runs joined, punctuation attached, the
 * pool's names and each sentence's first word capitalised; MARS's tags such as <info> untouched). `fromNatural` takes
 * what the model wrote back to token form (lower case, punctuation and each digit a token of its own), so answers,
 * support sentences and exact match are judged in the form the worlds and their tests use. For a world's own text
 * `fromNatural(toNatural(t)) === t` (tests/unit/endpoints/naturalText.test.ts, over whole worlds).
 */
import { allPoolNames } from '../../../mars/namePool';

let names: ReadonlySet<string> | null = null;
const poolNames = (): ReadonlySet<string> => (names ??= new Set(allPoolNames()));

const PUNCTUATION = /^[.,?!;:]$/;
const SENTENCE_END = /^[.?!]$/;
const TAG = /^<\/?[a-z0-9]+>$/;

const capitalised = (w: string): string => w.charAt(0).toUpperCase() + w.slice(1);

/**
 * A world's token-form text as prose (see the header). The run's tokenizer decodes with punctuation already attached
 * ("renown. most"): such a mark is split off first, so sentence starts are found either way.
 */
export function toNatural(text: string): string {
  const out: string[] = [];
  let sentenceStart = true;
  let digits = false;
  for (const w of text.replace(/(?<=[^\s])([.,?!;:])(?=\s|$)/g, ' $1').split(' ')) {
    if (w === '') continue;
    if (/^\d$/.test(w)) {
      if (digits) out[out.length - 1] += w;
      else out.push(w);
      digits = true;
      sentenceStart = false;
      continue;
    }
    digits = false;
    if (PUNCTUATION.test(w) && out.length > 0 && !TAG.test(out.at(-1)!)) {
      out[out.length - 1] += w;
      sentenceStart = SENTENCE_END.test(w);
      continue;
    }
    if (TAG.test(w)) {
      out.push(w);
      continue;
    }
    out.push(sentenceStart || poolNames().has(w) ? capitalised(w) : w);
    sentenceStart = false;
  }
  return out.join(' ');
}

/** A model's prose in the worlds' token form: lower case, punctuation and digits as tokens, tags kept (see the header). */
export function fromNatural(text: string): string {
  return text
    .split(/(<\/?[A-Za-z0-9]+>)/)
    .map((part) =>
      TAG.test(part.toLowerCase())
        ? ` ${part.toLowerCase()} `
        : part
            .toLowerCase()
            .replace(/([.,?!;:()"])/g, ' $1 ')
            .replace(/(\d)/g, ' $1 '),
    )
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
}
