/**
 * Chat templates without a reference engine (issue 30, item 5; the comparison with transformers is
 * chatTemplatePeers.test.ts): the assistant mask on a ChatML template over a small byte-level tokenizer, the
 * prefix-consistency refusal on Qwen3's template, the fixed clock, the strip corrections, where templates are found in
 * a folder, and bad templates — one that loops, one that prints megabytes, one that raises, one that does not parse,
 * a template field of the wrong type, a file of the wrong kind — each refused in one line, in bounded time, while the
 * process goes on.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatEncoder } from '../../../engine/model/chat/chatEncoding';
import { ChatTemplate, ChatTemplateError, MAX_RANGE } from '../../../engine/model/chat/chatTemplate';
import { loadChatTemplate } from '../../../engine/model/chat/templateSource';
import { probeTemplate } from '../../../engine/model/chat/templateProbe';
import { HfTokenizer } from '../../../engine/model/tokenizers/hf/hfTokenizer';
import { CONVERSATIONS } from '../../fixtures/chat/conversations';
import { tempDir } from '../../fixtures/gguf/ggufKit';
import { tinyByteLevel } from '../../fixtures/tokenizer/tokenizerKit';

const FIXTURES = path.resolve(import.meta.dirname, '../../fixtures/chat');
const CHATML =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
const TOKENS = { bos_token: null, eos_token: '<|im_end|>' };

function chatMlTokenizer(): HfTokenizer {
  const added = ['<|im_start|>', '<|im_end|>'].map((content) => ({ content, special: true }));
  return new HfTokenizer(
    { tokenizer: tinyByteLevel({ words: ['user', 'assistant'], added }), config: { eos_token: '<|im_end|>' } },
    'tiny',
  );
}

let tmp: { dir: string; remove: () => void };
beforeAll(() => {
  tmp = tempDir('chat-template-');
});
afterAll(() => tmp?.remove());

describe('ChatEncoder', () => {
  it('masks each assistant turn and its end-of-turn token, nothing else', () => {
    const tokenizer = chatMlTokenizer();
    const encoder = new ChatEncoder(new ChatTemplate(CHATML, TOKENS, 'chatml'), tokenizer);
    for (const messages of CONVERSATIONS) {
      const { ids, mask, text } = encoder.conversation(messages);
      expect(mask).toHaveLength(ids.length);
      expect(tokenizer.decode(ids)).toBe(text);
      const masked = tokenizer.decode(ids.filter((_, k) => mask[k] === 1));
      const assistant = messages.filter((m) => m.role === 'assistant').map((m) => `${m.content}<|im_end|>`);
      expect(masked).toBe(assistant.join(''));
      // The prompt a turn is sampled after is exactly the conversation's ids before that turn.
      const last = messages.length - 1;
      const prompt = encoder.prompt(messages.slice(0, last)).ids;
      expect(ids.slice(0, prompt.length)).toEqual(prompt);
      expect([mask[prompt.length - 1], mask[prompt.length], mask.at(-1)]).toEqual([0, 1, 0]);
    }
  });

  it("refuses, in one line, a conversation Qwen3's template renders inconsistently", () => {
    const qwen3 = fs.readFileSync(path.join(FIXTURES, 'Qwen-Qwen3-0.6B.jinja'), 'utf8');
    const encoder = new ChatEncoder(new ChatTemplate(qwen3, TOKENS, 'qwen3'), chatMlTokenizer());
    // One turn: consistent (the template writes an empty <think> block into the assistant's turn).
    const one = encoder.conversation(CONVERSATIONS[0]!);
    expect(one.text).toContain('<think>\n\n</think>\n\nThe capital of France is Paris.<|im_end|>');
    // Reasoning in an earlier turn is dropped once a later question comes: the first turn's rendering changes.
    const messages = [
      { role: 'user', content: 'a?' },
      { role: 'assistant', content: '<think>why</think>A.' },
      { role: 'user', content: 'b?' },
      { role: 'assistant', content: 'B.' },
    ];
    expect(() => encoder.conversation(messages)).toThrow(/not prefix-consistent on this conversation \(message 1\)/);
  });
});

describe('ChatTemplate', () => {
  it('prints the date it was made with, not the wall clock', () => {
    const llama = fs.readFileSync(path.join(FIXTURES, 'meta-llama-Llama-3.2-3B-Instruct.jinja'), 'utf8');
    const t = new ChatTemplate(llama, { bos_token: '<|begin_of_text|>' }, 'llama', new Date(Date.UTC(2026, 11, 5)));
    const text = t.render([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true });
    expect(text).toContain('Today Date: 05 Dec 2026\n');
    expect(text.startsWith('<|begin_of_text|><|start_header_id|>system<|end_header_id|>')).toBe(true);
  });

  it("strips the characters strip/lstrip/rstrip are given, as Python's str methods do", () => {
    const t = new ChatTemplate(
      "{{ a.lstrip('\\n') }}|{{ a.rstrip('\\n') }}|{{ a.strip('\\n') }}|{{ a.strip() }}|{{ b.strip('xy') }}",
      {},
      'strip',
    );
    const text = t.render([], { addGenerationPrompt: false, extra: { a: '\n\n  x  \n', b: 'xyxaxy' } });
    expect(text).toBe('  x  \n|\n\n  x  |  x  |x|a');
  });

  it('bounds range() in a render', () => {
    const t = new ChatTemplate('{% for i in range(n) %}.{% endfor %}', {}, 'loop');
    expect(t.render([], { addGenerationPrompt: false, extra: { n: 5 } })).toBe('.....');
    expect(() => t.render([], { addGenerationPrompt: false, extra: { n: MAX_RANGE + 1 } })).toThrow(ChatTemplateError);
  });
});

describe('bad chat templates are refused in one line, in bounded time', () => {
  const probe = (source: string) => probeTemplate(source, TOKENS, 'test template', { timeoutMs: 3000, heapMb: 64 });

  it('a template that loops', async () => {
    await expect(probe('{% for i in range(10**9) %}{% endfor %}x')).rejects.toThrow(
      /^test template: the chat template (did not finish rendering a probe within 3000 ms|needed more than 64 MiB)/,
    );
  });

  it('a template that prints megabytes', async () => {
    const source = "{% for i in range(3000) %}{% for j in range(3000) %}{{ 'xxxxxxxxxx' }}{% endfor %}{% endfor %}";
    const err = await probe(source).catch((e: Error) => e);
    expect(err).toBeInstanceOf(ChatTemplateError);
    expect((err as Error).message.split('\n')).toHaveLength(1);
  });

  it('a template that raises, and one that does not parse', async () => {
    await expect(probe("{{ raise_exception('no system role') }}")).rejects.toThrow(
      'test template: the chat template failed on a probe conversation (no system role)',
    );
    expect(() => new ChatTemplate('{% for %}', TOKENS, 'broken')).toThrow(/^broken: the chat template does not parse/);
  });

  it('finds the roles a template renders', async () => {
    const onlyUser = "{% for m in messages %}{% if m.role == 'user' %}{{ m.content }}{% endif %}{% endfor %}";
    expect((await probe(CHATML)).roles).toEqual(['system', 'user', 'assistant', 'tool']);
    expect((await probe(onlyUser)).roles).toEqual(['user']);
  });

  it('folders: tokenizer_config.json first, then chat_template.jinja; none is null; wrong kinds refused', async () => {
    const dir = (name: string) => {
      const d = path.join(tmp.dir, name);
      fs.mkdirSync(d);
      return d;
    };
    const config = dir('config');
    fs.writeFileSync(
      path.join(config, 'tokenizer_config.json'),
      JSON.stringify({ chat_template: [{ name: 'default', template: CHATML }] }),
    );
    fs.writeFileSync(path.join(config, 'chat_template.jinja'), 'other');
    expect((await loadChatTemplate(config, TOKENS))!.template.source).toBe(CHATML);
    const jinja = dir('jinja');
    fs.writeFileSync(path.join(jinja, 'tokenizer_config.json'), JSON.stringify({ eos_token: '<|im_end|>' }));
    fs.writeFileSync(path.join(jinja, 'chat_template.jinja'), CHATML);
    expect((await loadChatTemplate(jinja, TOKENS))!.template.origin).toBe(path.join(jinja, 'chat_template.jinja'));
    expect(await loadChatTemplate(dir('base'), TOKENS)).toBeNull();
    const wrong = dir('wrong');
    fs.writeFileSync(path.join(wrong, 'tokenizer_config.json'), JSON.stringify({ chat_template: 42 }));
    await expect(loadChatTemplate(wrong, TOKENS)).rejects.toThrow(/chat_template must be a string or a list/);
    const notFile = dir('dir');
    fs.mkdirSync(path.join(notFile, 'chat_template.jinja'));
    await expect(loadChatTemplate(notFile, TOKENS)).rejects.toThrow(/chat_template\.jinja: is not a regular file/);
  });
});
