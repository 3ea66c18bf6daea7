/**
 * Chat templates against transformers 4.46.3 (issue 30, item 5), on the real SmolLM2-135M-Instruct GGUF's template and
 * on Llama 3.2's and Qwen3's (tests/fixtures/chat/), rendered by @huggingface/jinja here and by transformers' own
 * jinja2 environment there (tests/peers/chat_template_peer.py):
 *
 *   - every conversation renders to the same text, with and without the generation prompt (Qwen3 also with
 *     enable_thinking false), and a conversation one template refuses is refused by both;
 *   - the SmolLM2 GGUF's tokenizer and template, written as an HF folder and read back by loadChatTemplate, give the
 *     ids transformers' apply_chat_template(tokenize=True) gives (its tokens: Python `tokenizers` on that folder) on
 *     every conversation but the one whose assistant turn begins with spaces (ChatEncoder encodes a turn apart from
 *     the template's text, as a rollout samples it; the decoded text is the same);
 *   - the assistant mask ChatEncoder computes without markers equals the mask transformers computes from a version of
 *     the template with {% generation %} markers around each assistant turn and its <|im_end|> (the markers change no
 *     rendered character: checked), and decodes to exactly the assistant turns and their <|im_end|>.
 *
 * Skips when the model is absent unless MARS_LAB_EXPECT_MODELS=1, and when the peer venv is absent unless
 * MARS_LAB_EXPECT_PEERS=1 (then it fails).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatEncoder } from '../../../engine/model/chat/chatEncoding';
import { ChatTemplate, type ChatMessage } from '../../../engine/model/chat/chatTemplate';
import { loadChatTemplate, templateTokens } from '../../../engine/model/chat/templateSource';
import { withGgufFile } from '../../../engine/model/formats/gguf/ggufFile';
import { tokenizerFilesFromGguf } from '../../../engine/model/tokenizers/hf/ggufTokenizer';
import { loadHfFolderTokenizer } from '../../../engine/model/tokenizers/hf/hfFolder';
import { CONVERSATIONS } from '../../fixtures/chat/conversations';
import { peerPythonOrSkipReason, realModelOrSkipReason, tempDir } from '../../fixtures/gguf/ggufKit';

const FIXTURES = path.resolve(import.meta.dirname, '../../fixtures/chat');
const PEER_SCRIPT = path.resolve(import.meta.dirname, '../../peers/chat_template_peer.py');
/** A fixed clock on both sides: Llama 3.2's template prints today's date. */
const TODAY = { date_string: '26 Jul 2024' };

/** SmolLM2's template with {% generation %} around each assistant turn's content and its <|im_end|>. */
function taggedChatMl(source: string): string {
  // The template's string literals hold real newlines (the GGUF stores the template as written in its HF folder).
  const turn = "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}";
  if (!source.includes(turn)) throw new Error('SmolLM2 template changed: the test cannot mark its assistant turns');
  const tagged =
    "{% if message['role'] == 'assistant' %}{{'<|im_start|>assistant\n'}}{% generation %}" +
    "{{ message['content'] + '<|im_end|>' }}{% endgeneration %}{{'\n'}}{% else %}" +
    turn +
    '{% endif %}';
  return source.replace(turn, tagged);
}

function same(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

interface Case {
  template: string;
  messages: ChatMessage[];
  add_generation_prompt: boolean;
  extra?: Record<string, unknown>;
}
interface PeerOutput {
  cases: Array<{ text: string | null; error: string | null }>;
  encoded: Array<{ ids: number[]; mask: number[] | null; tagged_text: string | null; tagged_ids?: number[] }>;
}

let tmp: { dir: string; remove: () => void };
beforeAll(() => {
  tmp = tempDir('chat-template-peer-');
});
afterAll(() => tmp?.remove());

describe('chat templates against transformers, on SmolLM2, Llama 3.2 and Qwen3 templates', () => {
  it('the same text, ids and assistant mask', async (ctx) => {
    const model = realModelOrSkipReason();
    if (!model.path) return ctx.skip(model.reason);
    const peer = peerPythonOrSkipReason();
    if (!peer.python) return ctx.skip(peer.reason);

    // The GGUF's tokenizer and template as an HF folder: what a user's downloaded model folder holds.
    const { files, source } = await withGgufFile(model.path, async (f) => ({
      files: tokenizerFilesFromGguf(f.metadata, model.path!),
      source: f.metadata.get('tokenizer.chat_template') as string,
    }));
    expect(typeof source).toBe('string');
    const folder = path.join(tmp.dir, 'smollm2');
    fs.mkdirSync(folder);
    fs.writeFileSync(path.join(folder, 'tokenizer.json'), JSON.stringify(files.tokenizer));
    fs.writeFileSync(
      path.join(folder, 'tokenizer_config.json'),
      JSON.stringify({ ...files.config, chat_template: source }),
    );

    const tokens = templateTokens(files.config);
    const loaded = await loadChatTemplate(folder, tokens);
    expect(loaded).not.toBeNull();
    expect(loaded!.probe.roles).toEqual(['system', 'user', 'assistant', 'tool']);
    const templates: Record<string, string> = {
      folder: source,
      llama32: fs.readFileSync(path.join(FIXTURES, 'meta-llama-Llama-3.2-3B-Instruct.jinja'), 'utf8'),
      qwen3: fs.readFileSync(path.join(FIXTURES, 'Qwen-Qwen3-0.6B.jinja'), 'utf8'),
    };
    const ours: Record<string, ChatTemplate> = {
      folder: loaded!.template,
      llama32: new ChatTemplate(templates.llama32!, tokens, 'llama32'),
      qwen3: new ChatTemplate(templates.qwen3!, tokens, 'qwen3'),
    };
    const cases: Case[] = [];
    for (const name of Object.keys(templates)) {
      for (const messages of CONVERSATIONS) {
        for (const add of [false, true]) {
          const prompt = add ? messages.slice(0, -1) : messages;
          const extra = name === 'llama32' ? TODAY : undefined;
          cases.push({ template: name, messages: prompt, add_generation_prompt: add, ...(extra && { extra }) });
          if (name === 'qwen3' && add) {
            cases.push({
              template: name,
              messages: prompt,
              add_generation_prompt: add,
              extra: { enable_thinking: false },
            });
          }
        }
      }
    }
    const input = path.join(tmp.dir, 'input.json');
    const output = path.join(tmp.dir, 'output.json');
    fs.writeFileSync(input, JSON.stringify({ folder, tagged: taggedChatMl(source), templates, tokens, cases }));
    await promisify(execFile)(peer.python, [PEER_SCRIPT, input, output], {
      timeout: 600_000,
      env: { ...process.env, TRANSFORMERS_VERBOSITY: 'error', TQDM_DISABLE: '1' },
    });
    const theirs = JSON.parse(fs.readFileSync(output, 'utf8')) as PeerOutput;

    // 1. Rendering: equal text on every case, or both refuse it.
    expect(theirs.cases).toHaveLength(cases.length);
    let rendered = 0;
    cases.forEach((c, i) => {
      const t = theirs.cases[i]!;
      let text: string | null;
      try {
        text = ours[c.template]!.render(c.messages, { addGenerationPrompt: c.add_generation_prompt, extra: c.extra });
      } catch {
        text = null;
      }
      expect({ case: i, template: c.template, text }).toEqual({ case: i, template: c.template, text: t.text });
      if (text !== null) rendered++;
    });
    expect(rendered).toBeGreaterThanOrEqual(cases.length - 2);

    // 2. Ids and 3. the assistant mask, for the folder's own (SmolLM2) template.
    const tokenizer = await loadHfFolderTokenizer(folder);
    const encoder = new ChatEncoder(loaded!.template, tokenizer);
    const folderCases = cases.filter((c) => c.template === 'folder' && !c.add_generation_prompt);
    expect(theirs.encoded).toHaveLength(folderCases.length);
    let sameIds = 0;
    folderCases.forEach((c, i) => {
      const t = theirs.encoded[i]!;
      const mine = encoder.conversation(c.messages);
      expect(t.tagged_text).toBe(mine.text);
      expect(t.tagged_ids).toEqual(t.ids);
      // ChatEncoder encodes the template's text and each assistant turn apart, as a rollout's ids are (its prompt's
      // ids, then what it sampled); transformers encodes the whole text. They differ exactly where a turn begins with
      // whitespace that BPE merges with the template's newline before it; the text is the same either way.
      const split = c.messages.some((m) => m.role === 'assistant' && /^\s/.test(m.content));
      expect({ case: i, same: same(mine.ids, t.ids) }).toEqual({ case: i, same: !split });
      expect(tokenizer.decode(mine.ids)).toBe(tokenizer.decode(t.ids));
      if (!split) {
        sameIds++;
        expect(mine.mask).toEqual(t.mask);
      }
      // What the mask covers is each assistant turn's content and its end-of-turn token, nothing else.
      const masked = tokenizer.decode(mine.ids.filter((_, k) => mine.mask[k] === 1));
      const expected = c.messages
        .filter((m) => m.role === 'assistant')
        .map((m) => `${m.content}<|im_end|>`)
        .join('');
      expect(masked).toBe(expected);
    });
    expect(sameIds).toBeGreaterThanOrEqual(folderCases.length - 1);
  }, 600_000);
});
