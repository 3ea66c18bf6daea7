/**
 * The app's cluster methods where no Ray is needed (engine/api/cluster/clusterMethods.ts), through callApi as a window calls
 * them: the launch form's edited config becomes `path=value` sets over the preset's (only what changed; a union member
 * changed whole), a study's refusals in one line with nothing recorded (no preset, a closed loopback port, a token
 * variable that is not set, a run id that climbs out), the form's "Shared paths" box (off: a local path in the config
 * is refused naming its field; on: the study goes on to ask the cluster), and a recorded study whose cluster is
 * gone: attachStudy answers the state 'unreachable' instead of failing, and the record is kept as it was.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configDiffSets } from '../../engine/api/cluster/clusterMethods';
import type { ApiStudyView } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { resolvePresetConfig } from '../../engine/runs/presets/presets';
import { listStudyIds, readStudy, writeStudy } from '../../engine/cluster/studies/studyRecord';
import { PROJECT_DIR } from '../../engine/cluster/studies/studyPlan';
import { newStudyTarget, rayRequest } from '../../renderer/src/components/launch/studyTarget';
import { freePorts } from './rayHead';
import { planRayStudy } from './rayStudyPlan';

describe('the launch form config as a study’s sets', () => {
  it('sets only what changed, and a changed union member whole', () => {
    const base = resolvePresetConfig('seqgrpo-copy');
    expect(configDiffSets(base, structuredClone(base))).toEqual([]);
    const edited = structuredClone(base) as unknown as Record<string, Record<string, unknown>>;
    edited.budget!.steps = 7;
    edited.task = { ...edited.task, extraKeyOfAnotherMember: 'x' };
    const sets = configDiffSets(base, edited);
    expect(sets).toContain('budget.steps=7');
    expect(sets.find((s) => s.startsWith('task='))).toBe(`task=${JSON.stringify(edited.task)}`);
    expect(sets).toHaveLength(2);
  });
});

describe('cluster methods without a cluster', () => {
  let home: string;
  let host: Host;
  const api = <T>(method: string, params: unknown) => callApi(host.handlers, method, params) as Promise<T>;
  const refusal = (method: string, params: unknown) =>
    api(method, params).then(
      () => 'answered',
      (e: unknown) => (e as Error).message,
    );

  beforeAll(async () => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-appform-'));
    host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
  });
  afterAll(async () => {
    await host?.close();
    if (home) fs.rmSync(home, { recursive: true, force: true });
  });

  it('refuses a study in one line and records nothing', async () => {
    const [closed] = await freePorts(1);
    const url = `http://127.0.0.1:${closed}`;
    const cases: [unknown, RegExp][] = [
      // what a job executes is the host's to say, not a window's
      [
        { preset: 'seqgrpo-copy', seeds: [0], ray: { url, node: '/bin/sh' } },
        /^startStudy: invalid request \(ray: Unrecognized key: "node"\)/,
      ],
      [
        { config: { algorithm: 'seqgrpo' }, seeds: [0], ray: { url } },
        /^preset: a study on a cluster starts from a preset/,
      ],
      [
        { preset: 'seqgrpo-copy', seeds: [0], ray: { url } },
        /^Ray cluster at http:\/\/127\.0\.0\.1:\d+ is unreachable \(ECONNREFUSED/,
      ],
      [
        { preset: 'seqgrpo-copy', seeds: [0], ray: { url: 'ray://127.0.0.1:10001' } },
        /^--ray: "ray:\/\/127\.0\.0\.1:10001" is not an http\(s\) URL/,
      ],
      [
        // a token variable the user did not declare for this host is refused before the host looks at it
        { preset: 'seqgrpo-copy', seeds: [0], ray: { url, tokenEnv: 'MARS_LAB_TEST_UNSET_TOKEN' } },
        /^ray\.tokenEnv: MARS_LAB_TEST_UNSET_TOKEN is not declared for 127\.0\.0\.1:\d+ in MARS_LAB_ALLOW_KEYS/,
      ],
      [
        // declared (MARS_LAB_ALLOW_KEYS, set for this case below) but not set
        { preset: 'seqgrpo-copy', seeds: [0], ray: { url, tokenEnv: 'MARS_LAB_TEST_DECLARED_TOKEN' } },
        /^ray\.tokenEnv: MARS_LAB_TEST_DECLARED_TOKEN is not set/,
      ],
      [
        { preset: 'seqgrpo-copy', seeds: [0], ray: { url, tokenEnv: 'not a name' } },
        /^startStudy: invalid request \(ray\.tokenEnv: an environment variable name/,
      ],
      [
        { preset: 'seqgrpo-copy', variants: ['no-such-variant'], seeds: [0], ray: { url } },
        /^--variant no-such-variant: preset 'seqgrpo-copy' has/,
      ],
      [{ preset: 'seqgrpo-copy', sets: ['budget.steps=-1'], seeds: [0], ray: { url } }, /budget\.steps/],
    ];
    process.env.MARS_LAB_ALLOW_KEYS = `MARS_LAB_TEST_DECLARED_TOKEN=127.0.0.1:${closed}`;
    for (const [request, want] of cases) {
      const message = await refusal('startStudy', request);
      expect(message, JSON.stringify(request)).toMatch(want);
      expect(message.split('\n'), JSON.stringify(request)).toHaveLength(1);
    }
    delete process.env.MARS_LAB_ALLOW_KEYS;
    expect(listStudyIds(home)).toEqual([]);
  });

  it('the form\'s "Shared paths" box reaches the plan: off, a local path is refused; on, the study goes on', async () => {
    const [closed] = await freePorts(1);
    const url = `http://127.0.0.1:${closed}`;
    const target = { ...newStudyTarget(), where: 'ray' as const, rayUrl: url };
    expect(rayRequest(target).ray).not.toHaveProperty('sharedPaths');
    const shared = rayRequest({ ...target, sharedPaths: true });
    expect(shared.ray?.sharedPaths).toBe(true);
    // paths a window may name (inside the home), that a node could not read unless the home is shared
    const tasks = path.join(home, 'tasks.jsonl');
    const ck = path.join(home, 'ck');
    const gguf = path.join(home, 'm.gguf');
    fs.writeFileSync(tasks, '');
    fs.writeFileSync(gguf, '');
    fs.mkdirSync(ck);
    const cases: [string, string, string][] = [
      ['marti-homo', `task.file=${tasks}`, `task.file: ${tasks} (run seed 0) is a path on this machine`],
      [
        'seqgrpo-copy',
        `model.from=${JSON.stringify({ kind: 'checkpoint', path: ck })}`,
        `model.from.path: ${ck} (run seed 0) is a path on this machine`,
      ],
      ['chatgrpo-addition', `model.path=${gguf}`, `model.path: ${gguf} is a path on this machine`],
    ];
    for (const [preset, set, want] of cases) {
      const request = { preset, sets: [set], seeds: [0] };
      const off = await refusal('startStudy', { ...request, ...rayRequest(target) });
      expect(off.startsWith(want), off).toBe(true);
      // past the plan: the cluster is asked (and is not there)
      expect(await refusal('startStudy', { ...request, ...shared }), preset).toMatch(
        /^Ray cluster at http:\/\/127\.0\.0\.1:\d+ is unreachable/,
      );
    }
    expect(
      await refusal('startStudy', { preset: 'seqgrpo-copy', seeds: [0], ray: { url, sharedPaths: 'yes' } }),
    ).toMatch(/^startStudy: invalid request \(ray\.sharedPaths: /);
    expect(listStudyIds(home)).toEqual([]);
  });

  it("answers a recorded study whose cluster is gone as 'unreachable', keeping its record", async () => {
    const [closed] = await freePorts(1);
    const record = planRayStudy('seqgrpo-copy', [], {
      url: `http://127.0.0.1:${closed}`,
      rayHome: home,
      project: PROJECT_DIR,
    });
    record.runs[0]!.state = 'unknown';
    record.runs[0]!.step = 3;
    writeStudy(home, record);
    const before = fs.readFileSync(path.join(home, 'studies', `${record.id}.json`), 'utf8');
    const { study } = await api<{ study: ApiStudyView }>('attachStudy', { studyId: record.id });
    expect(study).toMatchObject({ id: record.id, link: 'unreachable', runs: [{ state: 'unknown', step: 3 }] });
    expect(study.message).toMatch(/^Ray cluster at http:\/\/127\.0\.0\.1:\d+ is unreachable/);
    expect(fs.readFileSync(path.join(home, 'studies', `${record.id}.json`), 'utf8')).toBe(before);
    const listed = await api<{ studies: ApiStudyView[] }>('listStudies', {});
    expect(listed.studies.map((s) => [s.id, s.link])).toEqual([[record.id, 'unreachable']]);
    expect(readStudy(home, record.id).runs[0]!.state).toBe('unknown');
    // the rest of its methods: one line each
    expect(await refusal('stopClusterJob', { studyId: record.id })).toMatch(/^Ray cluster at .* is unreachable/);
    expect(await refusal('stopClusterJob', { studyId: record.id, runId: 'not-its-run' })).toMatch(
      /^runId: study \S+ has no run 'not-its-run'/,
    );
    expect(await refusal('getClusterLog', { studyId: record.id, runId: '../x' })).toMatch(
      /^getClusterLog: invalid request \(runId: /,
    );
    expect(await api('getClusterLog', { studyId: record.id, runId: record.runs[0]!.runId })).toEqual({
      text: '',
      from: 0,
      size: 0,
    });
    expect(await refusal('attachStudy', { studyId: 'no-such-study' })).toMatch(/^no study 'no-such-study'/);
  });
});
