/**
 * The floors stay one-way: `npm run deps` (scripts/deps.mjs, dependency-cruiser with .dependency-cruiser.cjs) finds no
 * import that goes up a floor in the project, and its rules do catch one: a small tree laid out like the project
 * before the floors were mended (an algorithm importing the run layer's Algorithm contract, the model importing a run
 * helper, the renderer importing the run layer) fails, as do a type-only upward import, a module in a folder with no
 * floor, a value import of the contract in a window, a pure module importing Node, one algorithm importing another,
 * a circle of imports that run (a circle of type-only imports and a component drawing itself pass), the native kernels
 * importing the backend above them, and base/ importing another engine folder.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
}

/** `node scripts/deps.mjs --json` on the tree in `cwd`: its exit status and the rules it found broken. */
function deps(cwd?: string): { status: number | null; violations: Violation[]; output: string } {
  const r = spawnSync(process.execPath, ['scripts/deps.mjs', '--json', ...(cwd ? ['--cwd', cwd] : [])], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const out = JSON.parse(r.stdout) as { summary: { violations: Violation[] } };
  return { status: r.status, violations: out.summary.violations, output: r.stderr };
}

const tmp: string[] = [];
afterAll(() => tmp.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

/** A tree of `files` (path → source) in a fresh folder, with a tsconfig like the project's. */
function tree(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-floors-'));
  tmp.push(dir);
  const all = {
    'tsconfig.json': JSON.stringify({
      compilerOptions: { module: 'ESNext', moduleResolution: 'bundler', strict: true },
    }),
    ...files,
  };
  for (const [p, text] of Object.entries(all)) {
    fs.mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
    fs.writeFileSync(path.join(dir, p), text);
  }
  return dir;
}

describe('floors', () => {
  it('no import in the project goes up a floor (npm run deps passes)', () => {
    const r = deps();
    expect(r.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`)).toEqual([]);
    expect(r.status).toBe(0);
  }, 120_000);

  it('fails on the imports the project had before the floors were mended', () => {
    const dir = tree({
      'engine/runs/trainer.ts': 'export interface Trainer { step: number }\n',
      'engine/runs/boundedText.ts': 'export const clip = (s: string) => s.slice(0, 10);\n',
      'engine/runs/metricCatalog.ts': 'export const UNIT_TEXT = {};\n',
      'engine/runs/runLoop.ts': "import { mars } from './registry';\nexport const loop = mars;\n",
      'engine/runs/registry.ts': "import { mars as m } from '../mars/trainer';\nexport const mars = m;\n",
      'engine/mars/trainer.ts':
        "import type { Trainer } from '../runs/trainer';\nexport const mars: Trainer | null = null;\n",
      'engine/model/checkpoint.ts': "import { clip } from '../runs/boundedText';\nexport const c = clip;\n",
      'renderer/src/components/Dashboard.ts':
        "import { UNIT_TEXT } from '../../../engine/runs/metricCatalog';\nexport const u = UNIT_TEXT;\n",
    });
    const r = deps(dir);
    expect(r.status).toBe(1);
    expect(r.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).sort()).toEqual([
      'algorithms-imports-no-floor-above: engine/mars/trainer.ts → engine/runs/trainer.ts',
      'model-imports-no-floor-above: engine/model/checkpoint.ts → engine/runs/boundedText.ts',
      'window-sees-the-api-only: renderer/src/components/Dashboard.ts → engine/runs/metricCatalog.ts',
    ]);
  }, 120_000);

  it('fails on a type-only upward import, a folder with no floor, a window taking zod, impure shared code, one algorithm importing another', () => {
    const dir = tree({
      'engine/seqgrpo/task.ts': "export type SeqTaskKind = 'copy';\n",
      'engine/training/configSections.ts':
        "import type { SeqTaskKind } from '../seqgrpo/task';\nexport const k: SeqTaskKind = 'copy';\n",
      'engine/gadgets/thing.ts': "import { k } from '../training/configSections';\nexport const t = k;\n",
      'engine/api/contract/contract.ts': 'export const schema = 1;\nexport type Api = number;\n',
      'renderer/src/lib/api.ts':
        "import { schema } from '../../../engine/api/contract/contract';\nimport type { Api } from '../../../engine/api/contract/contract';\nexport const s: Api = schema;\n",
      'engine/pure/catalog.ts': "import fs from 'node:fs';\nexport const f = fs;\n",
      'engine/marti/trainer.ts': "import { mars } from '../mars/trainer';\nexport const m = mars;\n",
      'engine/mars/trainer.ts': 'export const mars = 1;\n',
    });
    const r = deps(dir);
    expect(r.status).toBe(1);
    const broken = r.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
    expect(broken).toContain(
      'training-imports-no-floor-above: engine/training/configSections.ts → engine/seqgrpo/task.ts',
    );
    expect(broken).toContain('engine-module-has-a-floor: engine/gadgets/thing.ts → engine/training/configSections.ts');
    expect(broken).toContain('window-takes-types-only: renderer/src/lib/api.ts → engine/api/contract/contract.ts');
    expect(broken).toContain('pure-is-pure: engine/pure/catalog.ts → fs');
    expect(broken).toContain('algorithms-apart: engine/marti/trainer.ts → engine/mars/trainer.ts');
  }, 120_000);

  it('fails on a runtime circle (not a type-only one, not a self-import), native kernels importing the backend, base/ importing the engine', () => {
    const dir = tree({
      'engine/runs/folder/runFolder.ts':
        "import { lock } from './runLock';\nexport const folder = 1;\nexport const l = lock;\n",
      'engine/runs/folder/runLock.ts': "import { folder } from './runFolder';\nexport const lock = folder;\n",
      'engine/runs/summary/a.ts': "import type { B } from './b';\nexport type A = { b?: B };\n",
      'engine/runs/summary/b.ts': "import type { A } from './a';\nexport type B = { a?: A };\n",
      'renderer/src/components/Field.svelte.ts':
        "import { f } from './Field.svelte';\nexport const g = f;\nexport const f = 1;\n",
      'engine/tensor/backend.ts': 'export const backend = 1;\n',
      'engine/tensor/native/addon.ts': "import { backend } from '../backend';\nexport const a = backend;\n",
      'engine/records/r.ts': 'export const r = 1;\n',
      'engine/base/userError.ts': "import { r } from '../records/r';\nexport const u = r;\n",
    });
    const r = deps(dir);
    expect(r.status).toBe(1);
    const broken = r.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
    // dependency-cruiser names a circle once, from one of its modules
    const circles = broken.filter((b) => b.startsWith('no-runtime-circle'));
    expect(circles).toHaveLength(1);
    expect(circles[0]).toMatch(
      /engine\/runs\/folder\/run(Folder|Lock)\.ts → engine\/runs\/folder\/run(Folder|Lock)\.ts/,
    );
    expect(broken).toContain(
      'native-kernels-below-the-backend: engine/tensor/native/addon.ts → engine/tensor/backend.ts',
    );
    expect(broken).toContain('base-imports-no-engine: engine/base/userError.ts → engine/records/r.ts');
  }, 120_000);
});
