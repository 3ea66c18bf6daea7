/**
 * GPUs for a study's Ray jobs (issue 33, item 6), the parts that need no cluster: a study asking for GPUs per job
 * trains on the webgpu backend unless its sets name a backend, one asking for none keeps the entrypoint it had; a
 * record from before GPUs could be asked for still reads; the jobs list takes a job's GPUs from Ray's details where a
 * version sends them, else from mars-lab's metadata (Ray 2.52.1 sends none: tests/ray/rayJobs.test.ts);
 * the launch form's text becomes the request's gpusPerJob or a problem naming the field.
 */
import { describe, expect, it } from 'vitest';
import { rayEntrypoint } from '../../../engine/cluster/studies/studyPlan';
import { studyRecordSchema } from '../../../engine/cluster/studies/studyRecord';
import { jobDetailsSchema, jobGpus } from '../../../engine/cluster/ray/jobsSchemas';
import { studyViewSchema } from '../../../engine/api/contract/studies';
import {
  gpusPerJob,
  newStudyTarget,
  rayRequest,
  targetProblem,
} from '../../../renderer/src/components/launch/studyTarget';
import { planRayStudy, type RayWhere } from '../../ray/rayStudyPlan';

const study = (where: Partial<RayWhere>, sets: string[] = []) => planRayStudy('seqgrpo-copy', sets, where);

describe('GPU jobs', () => {
  it('a job given GPUs trains on webgpu unless the sets name a backend', () => {
    const none = study({});
    expect(rayEntrypoint(none, none.runs[0]!)).not.toContain('backend=');
    const gpu = study({ gpusPerJob: 1 });
    expect(rayEntrypoint(gpu, gpu.runs[0]!)).toMatch(/ --set backend=webgpu$/);
    const named = study({ gpusPerJob: 0.5 }, ['backend=wasm']);
    const entry = rayEntrypoint(named, named.runs[0]!);
    expect(entry).toContain('--set backend=wasm');
    expect(entry).not.toContain('webgpu');
  });

  it('a record without gpusPerJob still reads; the job details keep what the job asked for', () => {
    const old = study({});
    expect(old.where).not.toHaveProperty('gpusPerJob');
    expect(studyRecordSchema.parse(JSON.parse(JSON.stringify(old))).where).toMatchObject({ kind: 'ray' });
    const job = jobDetailsSchema.parse({ status: 'PENDING', submission_id: 'r1', entrypoint_num_gpus: 2 });
    expect(jobGpus(job)).toBe(2);
    const real = jobDetailsSchema.parse({ status: 'PENDING', submission_id: 'r2', metadata: { mars_lab_gpus: '0.5' } });
    expect(jobGpus(real)).toBe(0.5);
    expect(jobGpus(jobDetailsSchema.parse({ status: 'PENDING', metadata: { mars_lab_gpus: 'x' } }))).toBe(0);
  });

  it("the launch form's GPUs per job: empty is none, a number is sent, anything else is a problem", () => {
    const t = { ...newStudyTarget(), where: 'ray' as const };
    expect(rayRequest(t).ray).not.toHaveProperty('gpusPerJob');
    expect(rayRequest({ ...t, gpusText: ' 0.5 ' }).ray?.gpusPerJob).toBe(0.5);
    expect(gpusPerJob({ ...t, gpusText: 'two' })).toBeNull();
    expect(targetProblem({ ...t, gpusText: 'two' }, 'seqgrpo-copy', [0], false)).toMatch(/^GPUs per job:/);
    expect(targetProblem({ ...t, gpusText: '1' }, 'seqgrpo-copy', [0], false)).toBeNull();
  });

  it("a study's view for a window keeps each run's real model (the studies list shows it)", () => {
    const planned = study({ gpusPerJob: 1 });
    const run = { ...planned.runs[0]!, model: 'smollm2-135m-instruct' };
    const view = studyViewSchema.parse({
      id: planned.id,
      createdAt: planned.createdAt,
      preset: planned.preset,
      where: { kind: 'ray', url: 'http://127.0.0.1:8265', gpusPerJob: 1 },
      runs: [run],
      link: 'idle',
    });
    expect(view.runs[0]!.model).toBe('smollm2-135m-instruct');
  });
});
