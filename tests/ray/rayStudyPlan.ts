/**
 * A study planned for Ray jobs as the study tests make one: engine/cluster/studies/studyPlan.ts planStudy with one run
 * (no variant, seed 0) and a Ray `where` whose every field has a default (RAY_WHERE), so a test names only what it is
 * about: the preset, its sets, a GPU request, a shipped project, a real head's address and home. Pure: it plans, it
 * submits nothing, so the tests that need no cluster (tests/unit/studies/) use it as the Ray tests here do.
 */
import { planStudy, type PlanInput } from '../../engine/cluster/studies/studyPlan';
import type { StudyRecord, StudyWhere } from '../../engine/cluster/studies/studyRecord';

export type RayWhere = Extract<StudyWhere, { kind: 'ray' }>;

/** A dashboard on loopback, the cluster's home at /h, the project at /opt/mars-lab, `node` on its PATH, 1 CPU a job. */
export const RAY_WHERE: RayWhere = {
  kind: 'ray',
  url: 'http://127.0.0.1:8265',
  rayHome: '/h',
  project: '/opt/mars-lab',
  node: 'node',
  cpusPerJob: 1,
};

/** `preset` with `sets` on Ray, `where` over RAY_WHERE; `runs` for other variants, seeds or a fixed time than one run's. */
export function planRayStudy(
  preset: string,
  sets: string[] = [],
  where: Partial<Omit<RayWhere, 'kind'>> = {},
  runs: Partial<Pick<PlanInput, 'variants' | 'seeds' | 'now'>> = {},
): StudyRecord {
  return planStudy({ preset, variants: [null], seeds: [0], sets, ...runs, where: { ...RAY_WHERE, ...where } });
}
