/**
 * No request freezes the host: crafted `--set`s and configs are refused at once with one line naming the field and the
 * limit, without building what they ask for (a 4-billion-slot list, a copy of the config per assignment, an error
 * message holding the whole value). Run under vitest's timeout: today's code took minutes and gigabytes on these.
 */
import { describe, expect, it, vi } from 'vitest';
import { applySets, InvalidSetError } from '../../../engine/runs/config/configOverrides';
import { checkRunConfig } from '../../../engine/runs/config/configSchema';

describe('--set list indices', () => {
  it('refuses an index past the end of a list, naming the field and its length, without building the list', () => {
    const config = { algorithm: 'seqgrpo', tags: ['a', 'b'] };
    expect(() => applySets(config, ['tags.4294967294=x'])).toThrow(InvalidSetError);
    expect(() => applySets(config, ['tags.4294967294=x'])).toThrow(
      /tags is a list of 2 items, so the index must be from 0 to 2 \(2 adds one at the end\), not 4294967294/,
    );
    expect(() => applySets(config, ['tags.3=x'])).toThrow(/tags is a list of 2 items/);
  }, 5_000);

  it('an index equal to the length appends; smaller ones replace', () => {
    expect(applySets({ tags: ['a', 'b'] }, ['tags.2=c', 'tags.0=z', 'tags.3=d'])).toEqual({
      tags: ['z', 'b', 'c', 'd'],
    });
  });
});

describe('many --sets', () => {
  it('copy the config once, not once per assignment, and leave the input as it was', () => {
    const config = { algorithm: 'seqgrpo', notes: 'x'.repeat(100_000), tags: [] as string[] };
    const sets = Array.from({ length: 200 }, (_, i) => `tags.${i}=t${i}`);
    const clone = vi.spyOn(globalThis, 'structuredClone');
    try {
      const out = applySets(config, sets) as { tags: string[] };
      expect(out.tags).toHaveLength(200);
      expect(out.tags[199]).toBe('t199');
      expect(config.tags).toEqual([]);
      expect(clone).toHaveBeenCalledTimes(1);
    } finally {
      clone.mockRestore();
    }
  });

  it('a path deeper than any config is refused', () => {
    expect(() => applySets({}, [`${Array.from({ length: 100 }, () => 'a').join('.')}=1`])).toThrow(
      /the path has 100 fields; a config is at most 32 deep/,
    );
  });
});

describe('config size and error messages', () => {
  it('a config over 256 KiB is refused before validation, naming the limit', () => {
    const huge = { algorithm: 'seqgrpo', notes: 'n'.repeat(1_700_000) };
    const checked = checkRunConfig(huge);
    expect(checked).toEqual({
      success: false,
      issues: [
        {
          path: '',
          message: expect.stringMatching(/^the config is larger than 256 KiB as JSON; a config is at most 256 KiB/),
        },
      ],
    });
  }, 5_000);

  it('a config nested thousands deep is refused, not a stack overflow', () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    const checked = checkRunConfig({ algorithm: 'seqgrpo', notes: deep });
    expect(checked.success).toBe(false);
    if (!checked.success) expect(checked.issues[0]!.message).toMatch(/nested more than 32 levels deep/);
  }, 5_000);

  it('thousands of unknown fields give a short answer; values and keys are quoted only by a bounded prefix', () => {
    const many: Record<string, unknown> = { algorithm: 'seqgrpo' };
    for (let i = 0; i < 5000; i++) many[`field${i}`] = i;
    const checked = checkRunConfig(many);
    expect(checked.success).toBe(false);
    if (checked.success) return;
    expect(checked.issues.length).toBeLessThanOrEqual(21);
    expect(checked.issues.at(-1)!.message).toMatch(/and 4980 more problems/);

    const long = checkRunConfig({ algorithm: 'seqgrpo', seed: 'x'.repeat(100_000), ['k'.repeat(50_000)]: 1 });
    expect(long.success).toBe(false);
    if (long.success) return;
    for (const issue of long.issues) expect(issue.path.length + issue.message.length).toBeLessThan(1200);
    expect(long.issues.find((i) => i.path === 'seed')!.message).toMatch(/received "x+…$/);
  }, 5_000);
});

describe("errors never quote a file's content", () => {
  it('a damaged run.json or checkpoint config.json is named with a position, not its bytes', async () => {
    const fs = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const { readRunMeta } = await import('../../../engine/runs/folder/runFolder');
    const { loadCheckpoint } = await import('../../../engine/model/formats/checkpoint');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-quote-'));
    try {
      fs.writeFileSync(path.join(dir, 'run.json'), 'root:x:0:0:secret-token-9f1c');
      fs.writeFileSync(path.join(dir, 'config.json'), 'root:x:0:0:secret-token-9f1c');
      expect(() => readRunMeta(dir)).toThrow(/run\.json is not valid JSON \(an unexpected character\)/);
      expect(() => readRunMeta(dir)).not.toThrow(/secret|root:/);
      await expect(loadCheckpoint(dir)).rejects.toThrow(/config\.json: not valid JSON/);
      await expect(loadCheckpoint(dir)).rejects.not.toThrow(/secret|root:/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a request with thousands of unknown keys is answered in a bounded line', async () => {
    const { parseRequest } = await import('../../../engine/api/host/dispatch');
    const params: Record<string, number> = {};
    for (let i = 0; i < 5000; i++) params[`${'k'.repeat(1000)}${i}`] = i;
    let message = '';
    try {
      parseRequest('listRuns', params);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/^listRuns: invalid request/);
    expect(message.length).toBeLessThan(5000);
  });
});

describe('memory check override for runs made elsewhere', () => {
  it('MARS_LAB_IGNORE_MEMORY_CHECK=1 lets a too-large config through (resume, evaluation)', () => {
    const huge = {
      algorithm: 'seqgrpo',
      model: {
        hidden_size: 8192,
        intermediate_size: 32768,
        num_hidden_layers: 64,
        num_attention_heads: 128,
        num_key_value_heads: 128,
      },
    };
    expect(checkRunConfig(huge).success).toBe(false);
    process.env.MARS_LAB_IGNORE_MEMORY_CHECK = '1';
    try {
      expect(checkRunConfig(huge).success).toBe(true);
    } finally {
      delete process.env.MARS_LAB_IGNORE_MEMORY_CHECK;
    }
  });
});
