/**
 * A checkpoint's tokenizer file is named for what it is, mars-lab-tokenizer.json (Hugging Face's loaders read a
 * tokenizer.json in their own format and failed on ours); checkpoints written before, and resources/…/base-tiny,
 * still have tokenizer.json, which keeps being read.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  checkpointTokenizerFile,
  LEGACY_TOKENIZER_FILE,
  TOKENIZER_FILE,
} from '../../engine/model/formats/checkpointFiles';
import { loadTokenizer } from '../../engine/model/tokenizers/tokenizer';

let dir: string;
const byteTokenizer = JSON.stringify({
  type: 'byte',
  version: 1,
  specials: { pad: '<pad>', bos: '<bos>', eos: '<eos>', unk: '<unk>' },
});

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-ckpt-tok-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('checkpointTokenizerFile', () => {
  it('names the file for mars-lab, not tokenizer.json', () => {
    expect(TOKENIZER_FILE).toBe('mars-lab-tokenizer.json');
    expect(LEGACY_TOKENIZER_FILE).toBe('tokenizer.json');
  });

  it('reads mars-lab-tokenizer.json, which wins over a tokenizer.json beside it (e.g. a Hugging Face one)', () => {
    fs.writeFileSync(path.join(dir, TOKENIZER_FILE), byteTokenizer);
    fs.writeFileSync(path.join(dir, LEGACY_TOKENIZER_FILE), '{"version":"1.0","model":{"type":"BPE"}}');
    expect(checkpointTokenizerFile(dir)).toBe(path.join(dir, TOKENIZER_FILE));
  });

  it('reads an older checkpoint, which has only tokenizer.json', async () => {
    fs.writeFileSync(path.join(dir, LEGACY_TOKENIZER_FILE), byteTokenizer);
    expect(checkpointTokenizerFile(dir)).toBe(path.join(dir, LEGACY_TOKENIZER_FILE));
    expect((await loadTokenizer(checkpointTokenizerFile(dir))).vocabSize).toBe(260);
  });

  it("does not take an HF folder's tokenizer.json for an older checkpoint's (serve-model and model info tell them apart)", () => {
    fs.writeFileSync(path.join(dir, LEGACY_TOKENIZER_FILE), '{"version":"1.0","model":{"type":"BPE","vocab":{}}}');
    expect(checkpointTokenizerFile(dir)).toBe(path.join(dir, TOKENIZER_FILE));
    fs.writeFileSync(path.join(dir, LEGACY_TOKENIZER_FILE), '{"type":"word"');
    expect(checkpointTokenizerFile(dir)).toBe(path.join(dir, TOKENIZER_FILE)); // not JSON: not mars-lab's either
  });

  it('names the new file when there is neither (for the message)', () => {
    expect(checkpointTokenizerFile(dir)).toBe(path.join(dir, TOKENIZER_FILE));
  });

  it('the shipped base checkpoints keep loading', async () => {
    for (const base of ['resources/mars/base-tiny', 'resources/marti/base-tiny']) {
      const tokenizer = await loadTokenizer(checkpointTokenizerFile(base));
      expect(tokenizer.vocabSize).toBeGreaterThan(100);
    }
  });
});
