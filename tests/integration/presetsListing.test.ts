/**
 * `mars-lab presets` lists the recommended first run first and marks the presets sized for a GPU (issue 19), as the
 * app's Launch view does.
 */
import { describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli';

describe('mars-lab presets', () => {
  it('lists seqgrpo-copy first as the recommended first run, and says which presets are for a GPU', async () => {
    const r = await cli(['presets']);
    expect(r.code, r.stderr).toBe(0);
    const heads = r.stdout.split('\n').filter((l) => /^[a-z]/.test(l));
    expect(heads[0]).toMatch(/^seqgrpo-copy {2}\(recommended first run\)/);
    const gpu = heads.filter((l) => l.includes('(for a GPU)')).map((l) => l.split(' ')[0]);
    expect(gpu.sort()).toEqual([
      'mars-small',
      'marti-hetero-small',
      'marti-homo-small',
      'marti-python-gpu',
      'marti-single-small',
    ]);
  });
});
