/**
 * The config paths a study's Ray jobs would read on their nodes (issue 33, item 6; engine/cluster/studies/jobPaths.ts
 * and jobPathFields.ts), without a cluster: a base checkpoint (model.from.path, MARTI's marti.agents[].from.path), a
 * MARTI task file (task.file) and a MARS corpus are each refused in one line naming the field, the run and the fix,
 * before anything is planned; the presets' own checkpoints under resources/ go as they are (the cluster's project has
 * them); `--ray-shared-paths`, and its older name `--ray-shared-models`, let an absolute path through and refuse a
 * relative one. The CLI is asked against a closed loopback port: a refusal is the path's line, and a study let through
 * reaches the point of asking the cluster (unreachable) with nothing recorded.
 */
import fs from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planStudy, rayEntrypoint } from '../../../engine/cluster/studies/studyPlan';
import { listStudyIds } from '../../../engine/cluster/studies/studyRecord';
import { fieldValues, PATH_FIELDS } from '../../../engine/cluster/studies/jobPathFields';
import { jobPathProblem } from '../../../engine/cluster/studies/jobPaths';
import { UserError } from '../../../engine/base/userError';
import { cli } from '../../helpers/cli';
import { planRayStudy, type RayWhere } from '../../ray/rayStudyPlan';

const rayStudy = (preset: string, sets: string[], where: Partial<RayWhere> = {}, variant: string | null = null) =>
  planRayStudy(preset, sets, where, { variants: [variant] });

/** The UserError's message planning throws, or 'planned'. */
const refusal = (...args: Parameters<typeof rayStudy>): string => {
  try {
    rayStudy(...args);
    return 'planned';
  } catch (err) {
    expect(err).toBeInstanceOf(UserError);
    return (err as Error).message;
  }
};

const checkpoint = (p: string) => `model.from=${JSON.stringify({ kind: 'checkpoint', path: p })}`;

describe('config paths on Ray jobs', () => {
  it("martipy: its models are checked as models, and the evaluation's cached data set is refused (a job does not fetch it)", () => {
    expect(refusal('marti-python-single', [])).toMatch(
      /^task\.evalTasks: humaneval \(run seed 0\) is a data set in this machine's cache, and a Ray job does not fetch data sets/,
    );
    const own = ['task.evalTasks=/shared/humaneval.jsonl'];
    expect(refusal('marti-python-single', [...own, 'model.path=/data/m.gguf'])).toMatch(
      /^model\.path: \/data\/m\.gguf is a path on this machine/,
    );
    expect(refusal('marti-python-single', own)).toMatch(
      /^task\.evalTasks: \/shared\/humaneval\.jsonl \(run seed 0\) is a path/,
    );
    expect(refusal('marti-python-single', own, { sharedModels: true })).toBe('planned');
  });

  it('each kind of path field is refused in one line naming the field, the run and both ways out', () => {
    const cases: [string, string[], string | null, string][] = [
      ['seqgrpo-copy', [checkpoint('/data/ck/base')], null, 'model.from.path: /data/ck/base (run seed 0)'],
      ['mars-tiny', [checkpoint('/data/mars-base')], null, 'model.from.path: /data/mars-base (run seed 0)'],
      [
        'marti-hetero-bases',
        ['marti.agents.1.from.path=/data/agent-base'],
        null,
        'marti.agents.1.from.path: /data/agent-base (run seed 0)',
      ],
      ['marti-homo', ['task.file=/data/tasks.jsonl'], null, 'task.file: /data/tasks.jsonl (run seed 0)'],
    ];
    for (const [preset, sets, variant, head] of cases) {
      const line = refusal(preset, sets, {}, variant);
      expect(line.startsWith(`${head} is a path on this machine`), line).toBe(true);
      expect(line.split('\n')).toHaveLength(1);
      expect(line).toContain('--ray-shared-paths'); // a shared filesystem
      expect(line).toContain("this project's resources/"); // or sent with the project
    }
    // a variant names its run
    expect(refusal('mars-ablations', [checkpoint('/data/x')], {}, 'sys1-off')).toMatch(
      /^model\.from\.path: \/data\/x \(run variant sys1-off, seed 0\) is a path on this machine/,
    );
    // a task file is found from the job's working folder: the project's copy only when shipped, which it says
    expect(refusal('marti-homo', ['task.file=/data/tasks.jsonl'])).toContain('sent with --ship');
    // a corpus: training refuses it anyway, so that is the line, even with the paths declared shared
    const corpus = `task.corpus=${JSON.stringify({ folder: '/data/docs', questions: '/data/q.jsonl' })}`;
    for (const shared of [{}, { sharedModels: true as const }]) {
      expect(refusal('mars-tiny', [corpus], shared)).toMatch(
        /^task\.corpus: a corpus of your own is for evaluation .* \(run seed 0\)$/,
      );
    }
  });

  it("the presets' own checkpoints under resources/ go as they are, shipped or from the cluster's copy", () => {
    for (const preset of ['mars-tiny', 'marti-hetero-bases', 'marti-homo-updates']) {
      for (const project of ['/opt/mars-lab', '.']) {
        const study = rayStudy(preset, [], { project });
        expect(rayEntrypoint(study, study.runs[0]!)).toMatch(/ train --preset /);
      }
    }
    // relative but not in resources/, or climbing out of it: refused
    expect(refusal('seqgrpo-copy', [checkpoint('runs/x/checkpoints/step-5')])).toMatch(
      /^model\.from\.path: runs\/x\/checkpoints\/step-5 \(run seed 0\) is a path on this machine/,
    );
    expect(refusal('seqgrpo-copy', [checkpoint('resources/../package.json')])).toMatch(/is a path on this machine/);
    expect(refusal('seqgrpo-copy', [checkpoint('resources/no-such-base')])).toMatch(/is a path on this machine/);
  });

  it('a file in resources/ travels only with a shipped project; a checkpoint there either way', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-ray-paths-'));
    try {
      fs.mkdirSync(path.join(root, 'resources', 'tasks'), { recursive: true });
      fs.writeFileSync(path.join(root, 'resources', 'tasks', 't.jsonl'), '');
      const file = { field: 'task.file', value: 'resources/tasks/t.jsonl', kind: 'file' as const };
      const asCheckpoint = { ...file, field: 'model.from.path', kind: 'checkpoint' as const };
      const shipped = { shared: false, project: '.' };
      const copy = { shared: false, project: '/opt/mars-lab' };
      expect(jobPathProblem(file, 'seed 0', shipped, root)).toBeNull();
      expect(jobPathProblem(file, 'seed 0', copy, root)).toMatch(
        /^task\.file: resources\/tasks\/t\.jsonl \(run seed 0\)/,
      );
      expect(jobPathProblem(asCheckpoint, 'seed 0', copy, root)).toBeNull();
      // a real model is jobModels.ts's (a catalogue name is fetched on the node)
      expect(jobPathProblem({ ...file, kind: 'model' }, 'seed 0', copy, root)).toBeNull();
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('shared paths: an absolute path goes to the job as it is; a relative one is refused', () => {
    const shared = { sharedModels: true as const };
    const study = rayStudy('marti-hetero-bases', ['marti.agents.1.from.path=/shared/bases/b1'], shared);
    expect(rayEntrypoint(study, study.runs[0]!)).toContain('--set marti.agents.1.from.path=/shared/bases/b1');
    expect(refusal('marti-homo', ['task.file=/shared/tasks.jsonl'], shared)).toBe('planned');
    expect(refusal('seqgrpo-copy', [checkpoint('/shared/ck')], shared)).toBe('planned');
    expect(refusal('marti-homo', ['task.file=data/tasks.jsonl'], shared)).toMatch(
      /^task\.file: data\/tasks\.jsonl \(run seed 0\) is relative, and a job starts in its own folder on the node: with --ray-shared-paths/,
    );
    // here, nothing is refused: the runs read this machine's disk
    const here = planStudy({
      preset: 'marti-homo',
      variants: [null],
      seeds: [0],
      sets: ['task.file=/data/tasks.jsonl'],
      where: { kind: 'local', parallel: 1 },
    });
    expect(here.runs).toHaveLength(1);
  });

  it('the rows read every element of an array field, and name each by its index', () => {
    const config = {
      marti: { agents: [{ from: { kind: 'random' } }, { from: { path: 'a' } }, { from: { path: 'b' } }] },
    };
    expect(fieldValues(config, 'marti.agents[].from.path')).toEqual([
      { field: 'marti.agents.1.from.path', value: 'a' },
      { field: 'marti.agents.2.from.path', value: 'b' },
    ]);
    expect(fieldValues({ model: { from: { kind: 'random' } } }, 'model.from.path')).toEqual([]);
    // every row names a field its algorithm's presets can fill (a typo would make a row that never matches)
    expect(PATH_FIELDS.map((r) => `${r.algorithm} ${r.field}`)).toContain('marti task.file');
  });
});

describe('study --ray-shared-paths', () => {
  let home = '';
  let url = '';
  beforeAll(async () => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-ray-paths-cli-'));
    // a loopback port nobody listens on: a study let through by planning fails at asking the cluster
    const s = net.createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
    await new Promise((r) => s.close(r));
  });
  afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

  const study = (...flags: string[]) =>
    cli(['study', '--preset', 'marti-homo', '--seeds', '2', '--set', 'task.file=/data/tasks.jsonl', ...flags]);

  it('refuses a local path in one line, and lets it through with the flag or its older name', async () => {
    const refused = await study('--ray', url, '--home', home);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^mars-lab: task\.file: \/data\/tasks\.jsonl \(run seed 0\) is a path on this machine/),
    ]);
    for (const flag of ['--ray-shared-paths', '--ray-shared-models']) {
      const through = await study('--ray', url, '--home', home, flag);
      expect(through.code, flag).toBe(2);
      expect(through.stderr.trim(), flag).toMatch(/^mars-lab: Ray cluster at http:\/\/127\.0\.0\.1:\d+ is unreachable/);
    }
    expect(listStudyIds(home)).toEqual([]);
    const here = await cli(['study', '--preset', 'seqgrpo-copy', '--seeds', '1', '--ray-shared-paths']);
    expect(here.code).toBe(2);
    expect(here.stderr.trim()).toBe(
      "mars-lab: --ray-shared-paths says where a Ray job's node reads the config's paths: it needs --ray URL",
    );
  });
});
