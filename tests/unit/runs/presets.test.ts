import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  listPresets,
  loadPreset,
  PRESETS_DIR,
  readPresetFile,
  resolveConfigFile,
  resolvePresetConfig,
  UnknownPresetError,
} from '../../../engine/runs/presets/presets';
import { ConfigValidationError } from '../../../engine/runs/config/configSchema';
import { UserError } from '../../../engine/base/userError';

function thrown(f: () => unknown): Error {
  try {
    f();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected an error, but none was thrown');
}

const tmpDirs: string[] = [];
function presetDir(files: Record<string, unknown>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-presets-'));
  tmpDirs.push(dir);
  for (const [name, content] of Object.entries(files)) {
    fs.writeFileSync(path.join(dir, name), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return dir;
}
afterEach(() => {
  for (const d of tmpDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const good = (name: string, config: Record<string, unknown> = { algorithm: 'seqgrpo' }) => ({
  name,
  description: 'A test preset.',
  expectedRuntime: { cpuSeconds: null, gpuSeconds: 12.5, measuredOn: 'test' },
  config,
});

describe('shipped presets', () => {
  it('are found next to the engine, whatever the working directory', () => {
    expect(fs.existsSync(PRESETS_DIR)).toBe(true);
    expect(path.basename(PRESETS_DIR.replace(/[\\/]$/, ''))).toBe('presets');
  });

  it('every file validates, is named after its file, and has a description and runtime fields', () => {
    const files = fs.readdirSync(PRESETS_DIR).filter((f) => f.endsWith('.json'));
    const presets = listPresets();
    // listPresets puts the recommended first run first, then sorts by name ("marti-homo" before "marti-homo-small"), not by file name
    const names = files.map((f) => f.slice(0, -5)).sort();
    expect(presets.map((p) => p.name)).toEqual(['seqgrpo-copy', ...names.filter((n) => n !== 'seqgrpo-copy')]);
    expect(presets.filter((p) => p.recommended).map((p) => p.name)).toEqual(['seqgrpo-copy']);
    // the presets sized for a GPU say so (the app badges them, `mars-lab presets` prints "for a GPU")
    expect(presets.filter((p) => p.gpuOnly).map((p) => p.name)).toEqual(
      names.filter((n) => n.endsWith('-small') || n.endsWith('-gpu')),
    );
    for (const p of presets) {
      expect(p.description.trim().length, p.name).toBeGreaterThan(80);
      expect(p.expectedRuntime.measuredOn.trim(), p.name).not.toBe('');
      for (const s of [p.expectedRuntime.cpuSeconds, p.expectedRuntime.gpuSeconds]) {
        expect(s === null || s > 0).toBe(true);
      }
      expect(resolvePresetConfig(p.name).algorithm).toBe(p.config.algorithm);
    }
  });

  it('include the seqgrpo newcomer demo and a harder follow-up', () => {
    const copy = resolvePresetConfig('seqgrpo-copy');
    expect(copy).toMatchObject({
      algorithm: 'seqgrpo',
      model: { size: 'micro' },
      task: { kind: 'copy', length: 3, symbols: 6 },
    });
    const reverse = resolvePresetConfig('seqgrpo-reverse');
    expect(reverse).toMatchObject({ algorithm: 'seqgrpo', task: { kind: 'reverse' } });
    if (copy.algorithm !== 'seqgrpo' || reverse.algorithm !== 'seqgrpo') throw new Error('expected seqgrpo presets');
    expect(reverse.task.length).toBeGreaterThanOrEqual(copy.task.length);
  });
});

describe('loading presets', () => {
  it('an unknown preset is a UserError listing the available ones', () => {
    const err = thrown(() => loadPreset('seqgrpo-copyy'));
    expect(err).toBeInstanceOf(UnknownPresetError);
    expect(err).toBeInstanceOf(UserError);
    const names = fs
      .readdirSync(PRESETS_DIR)
      .filter((f) => f.endsWith('.json'))
      .map((f) => f.slice(0, -5))
      .sort();
    expect(err.message).toBe(`unknown preset 'seqgrpo-copyy'; available: ${names.join(', ')}`);
    const dir = presetDir({ 'b.json': good('b'), 'a.json': good('a') });
    expect(thrown(() => loadPreset('c', dir)).message).toBe("unknown preset 'c'; available: a, b");
  });

  it('never opens a file outside the presets folder', () => {
    const dir = presetDir({ 'a.json': good('a') });
    fs.writeFileSync(path.join(path.dirname(dir), 'outside.json'), JSON.stringify(good('outside')));
    try {
      expect(thrown(() => loadPreset('../outside', dir))).toBeInstanceOf(UnknownPresetError);
    } finally {
      fs.rmSync(path.join(path.dirname(dir), 'outside.json'));
    }
  });

  it('a preset file that is not JSON is named', () => {
    const dir = presetDir({ 'a.json': '{ "name": "a", ' });
    const err = thrown(() => listPresets(dir));
    expect(err).toBeInstanceOf(UserError);
    expect(err.message).toMatch(
      new RegExp(`^${path.join(dir, 'a.json').replace(/[.\\]/g, '\\$&')}: the preset is not valid JSON`),
    );
  });

  it('a malformed preset names the file and each field', () => {
    const dir = presetDir({
      'a.json': {
        ...good('b', { algorithm: 'seqgrpo', task: { groupSize: 1 } }),
        description: '',
        expectedRuntime: { cpuSeconds: -1, gpuSeconds: null, measuredOn: 'x' },
      },
    });
    const err = thrown(() => readPresetFile(path.join(dir, 'a.json')));
    expect(err).toBeInstanceOf(ConfigValidationError);
    const file = path.join(dir, 'a.json');
    expect(err.message).toContain(`${file}: description: must not be empty — received ""`);
    expect(err.message).toContain(`${file}: expectedRuntime.cpuSeconds: must be > 0 — received -1`);
    // The file's own fields are checked first; once they are right, the name and the config are.
    const dir2 = presetDir({ 'a.json': good('b', { algorithm: 'seqgrpo', task: { groupSize: 1 } }) });
    const err2 = thrown(() => readPresetFile(path.join(dir2, 'a.json')));
    const file2 = path.join(dir2, 'a.json');
    expect(err2.message).toContain(`${file2}: name: must equal the file name "a"`);
    expect(err2.message).toContain(
      `${file2}: config.task.groupSize: must be ≥ 2 (a group of one has no baseline; docs/algorithms.md §2.9) — received 1`,
    );
  });

  it('refuses unknown fields in a preset file', () => {
    const dir = presetDir({ 'a.json': { ...good('a'), runtime: 3 } });
    expect(thrown(() => listPresets(dir)).message).toMatch(
      /a\.json: runtime: unknown field \(allowed: name, description, expectedRuntime, config, variants, success, recommended, gpuOnly\)/,
    );
  });
});

describe('resolving a launch config', () => {
  const dir = () =>
    presetDir({ 'demo.json': good('demo', { algorithm: 'seqgrpo', task: { kind: 'copy' }, rl: { lr: 0.003 } }) });

  it('applies --set overrides on top of the preset and fills defaults', () => {
    const c = resolvePresetConfig('demo', ['task.kind=reverse', 'rl.lr=3e-4', 'budget.steps=10', 'tags=["x"]'], dir());
    if (c.algorithm !== 'seqgrpo') throw new Error('expected a seqgrpo config');
    expect(c.task.kind).toBe('reverse');
    expect(c.rl.lr).toBe(3e-4);
    expect(c.budget.steps).toBe(10);
    expect(c.tags).toEqual(['x']);
    expect(c.task.groupSize).toBe(16);
  });

  it('an invalid --set is reported against the flag, with the field path', () => {
    const err = thrown(() => resolvePresetConfig('demo', ['rl.lr=-1', 'task.kind=rev'], dir()));
    expect(err).toBeInstanceOf(ConfigValidationError);
    expect(err.message).toContain('--set rl.lr=-1: rl.lr: must be > 0 — received -1');
    expect(err.message).toContain(
      '--set task.kind=rev: task.kind: expected one of "copy" | "reverse" | "sort" | "increment" — received "rev"',
    );
    expect(thrown(() => resolvePresetConfig('demo', ['rl.lrr=1'], dir())).message).toMatch(
      /^--set rl\.lrr=1: rl\.lrr: unknown field/,
    );
  });

  it('a problem no --set touched is reported against the preset', () => {
    const d = presetDir({ 'demo.json': good('demo', { algorithm: 'seqgrpo', task: { trainSeed: 5 } }) });
    // The preset file alone is valid (evalSeed defaults to 2); the --set makes the seeds collide on evalSeed.
    expect(thrown(() => resolvePresetConfig('demo', ['task.evalSeed=5'], d)).message).toMatch(
      /^--set task\.evalSeed=5: task\.evalSeed: must differ/,
    );
    expect(thrown(() => resolvePresetConfig('demo', ['task.trainSeed=2'], dir())).message).toMatch(
      /^preset 'demo': task\.evalSeed: must differ/,
    );
  });

  it("a variant's overrides apply before --set, and unknown or invalid variants are named", () => {
    const d = presetDir({
      'grid.json': {
        ...good('grid', { algorithm: 'seqgrpo', task: { kind: 'copy' } }),
        variants: { rev: ['task.kind=reverse', 'rl.lr=0.01'] },
      },
    });
    const c = resolvePresetConfig('grid', ['rl.lr=0.02'], d, 'rev');
    if (c.algorithm !== 'seqgrpo') throw new Error('expected a seqgrpo config');
    expect(c.task.kind).toBe('reverse');
    expect(c.rl.lr).toBe(0.02);
    const plain = resolvePresetConfig('grid', [], d);
    expect(plain.algorithm === 'seqgrpo' && plain.task.kind).toBe('copy');
    expect(thrown(() => resolvePresetConfig('grid', [], d, 'sort')).message).toBe(
      "--variant sort: preset 'grid' has the variants rev",
    );
    const bad = presetDir({ 'grid.json': { ...good('grid'), variants: { broken: ['task.kind=rev'] } } });
    expect(thrown(() => loadPreset('grid', bad)).message).toMatch(/variants\.broken: .*task\.kind: expected one of/);
  });

  it('a malformed --set is a UserError naming the flag', () => {
    const err = thrown(() => resolvePresetConfig('demo', ['rl.lr'], dir()));
    expect(err).toBeInstanceOf(UserError);
    expect(err.message).toMatch(/^--set rl\.lr: expected path=value/);
  });

  it('a config file: not JSON, not an object, or invalid, each with a clear message', () => {
    const d = presetDir({
      'bad.json': 'algorithm: seqgrpo',
      'list.json': '[1]',
      'ok.json': { algorithm: 'seqgrpo', rl: { lr: 0.01 } },
    });
    const bad = thrown(() => resolveConfigFile(path.join(d, 'bad.json')));
    expect(bad).toBeInstanceOf(UserError);
    expect(bad.message).toMatch(/bad\.json: the config is not valid JSON/);
    expect(thrown(() => resolveConfigFile(path.join(d, 'list.json'))).message).toMatch(
      /list\.json: expected a JSON object with an "algorithm" field, got a list/,
    );
    expect(thrown(() => resolveConfigFile(path.join(d, 'missing.json'))).message).toMatch(
      /missing\.json: cannot read the config \(no such file\)/,
    );
    expect(resolveConfigFile(path.join(d, 'ok.json'), ['rl.loss=gspo']).rl).toMatchObject({ lr: 0.01, loss: 'gspo' });
    expect(thrown(() => resolveConfigFile(path.join(d, 'ok.json'), ['rl.lr=0'])).message).toBe(
      '--set rl.lr=0: rl.lr: must be > 0 — received 0',
    );
  });
});
