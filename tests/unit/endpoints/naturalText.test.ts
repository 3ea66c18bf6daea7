/**
 * The generated worlds as prose for a real chat model, and its answers back in token form (issue 32, "MARS with a
 * System 1 that can write"): the round trip over whole worlds, what a model's sentence becomes, and the MARS chat
 * dialect showing prose and reading prose back into the run's tokens.
 */
import { describe, expect, it } from 'vitest';
import { corpusFormat } from '../../../engine/mars/corpus';
import { generateWorld } from '../../../engine/mars/world';
import { marsChat } from '../../../engine/runs/evaluation/chat/marsChat';
import { fromNatural, toNatural } from '../../../engine/runs/evaluation/chat/naturalText';

const OVERFLOW = {
  people: 8,
  cities: 4,
  countries: 2,
  organisations: 3,
  works: 4,
  fillerSentencesPerPage: [0, 1] as [number, number],
  pageTokens: [120, 160] as [number, number],
  distractorMentions: 3,
  mentionPageTokens: 64,
};

describe('natural text', () => {
  it('every page, question and answer of whole worlds comes back from prose exactly', () => {
    let texts = 0;
    for (const [seed, spec] of [
      [1, undefined],
      [2, OVERFLOW],
      [77, OVERFLOW],
    ] as const) {
      const w = generateWorld(seed, spec);
      const all = [...w.pages.map((p) => p.text), ...w.questions.flatMap((q) => [q.text, ...q.answers])];
      for (const t of all) {
        const prose = toNatural(t);
        expect(prose).not.toMatch(/\d \d| [.,?]/); // years whole, punctuation attached
        expect(fromNatural(prose)).toBe(t);
      }
      texts += all.length;
    }
    expect(texts).toBeGreaterThan(300);
  });

  it('writes prose: names and sentence starts capitalised, years whole, tags untouched', () => {
    const name = generateWorld(1).entities[0]!.name;
    expect(toNatural(`${name} was born in the year 1 8 7 2 . who wrote it ?`)).toBe(
      `${name[0]!.toUpperCase()}${name.slice(1)} was born in the year 1872. Who wrote it?`,
    );
    expect(toNatural('<info> the year 1 9 0 1 <sep> nothing </info>')).toBe(
      '<info> The year 1901 <sep> nothing </info>',
    );
  });

  it("reads a model's prose in token form: case, punctuation, digits, tags", () => {
    expect(fromNatural('Krorabrur was born in 1872, in Zize.')).toBe('krorabrur was born in 1 8 7 2 , in zize .');
    expect(fromNatural('<Think>Zize?</Think> <answer>Zize</answer>')).toBe(
      '<think> zize ? </think> <answer> zize </answer>',
    );
  });

  it('the MARS dialect shows prose and reads prose back into the run’s tokens', () => {
    const format = corpusFormat();
    const w = generateWorld(5, OVERFLOW);
    const q = w.questions.find((x) => x.family === 'direct' && /1 \d/.test(x.answers[0]!))!;
    const page = w.pages[0]!;
    const dialect = marsChat(format, { natural: true });
    const sys1 = dialect.chat([
      ...format.sys1Head(format.encode(q.text)),
      ...format.encode(page.text),
      format.ids.sep,
    ])!;
    const user = sys1.messages.at(-1)!.content;
    expect(user).toContain(toNatural(page.text));
    // the worked example is prose too, and goes as turns of the chat
    expect(sys1.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(sys1.messages.map((m) => m.content).join('\n')).not.toMatch(/\d \d \d \d|\nYou: /);
    const year = q.answers[0]!.replace(/ /g, '');
    const read = sys1.read(`The answer is ${year}.`, 'stop');
    expect(read.text).toBe(`the answer is ${q.answers[0]!} . <eos>`);
    const sys2 = dialect.chat(format.sys2Prompt(q.text))!;
    expect(sys2.messages.at(-1)!.content).toBe(toNatural(q.text));
    expect(sys2.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant', 'user']);
    expect(sys2.read(`<think>I know</think> <answer>${year}</answer>`, 'stop').text).toBe(
      `<think> i know </think> <answer> ${q.answers[0]!} </answer>`,
    );
    // without `natural` the dialect is today's: token form shown, the answer kept as written
    const plain = marsChat(format).chat(format.sys2Prompt(q.text))!;
    expect(plain.messages[1]!.content).toBe(format.decode(format.encode(q.text)));
    expect(plain.read(`<answer>${year}</answer>`, 'stop').text).toBe(`<answer> ${year} </answer>`);
  });
});
