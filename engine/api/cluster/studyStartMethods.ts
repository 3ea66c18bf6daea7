/**
 * The host's methods that begin a study: a preset's variants (and whether a cluster study ships the project unless
 * told), and startStudy, here through the host's launcher and slots or on a Ray cluster, shipped or not
 * (clusterShip.ts). Planned by the code `mars-lab study` uses (engine/cluster/studies/studyPlan.ts).
 */
import { loadPreset } from '../../runs/presets/presets';
import { fetchRule, planStudy } from '../../cluster/studies/studyPlan';
import { UserError } from '../../base/userError';
import type { ApiParsedRequest } from '../contract/contract';
import type { ApiHandlers } from '../host/host';
import { RAY_NODE_ENV, RAY_PROJECT_ENV, type ClusterContext } from './clusterContext';
import { checkShippable, shipForStudy, shipsByDefault } from './clusterShip';
import { hostStudyLauncher } from './studyLauncher';
import type { StudyFollowing } from './studyFollow';
import { studySets } from './studySets';

export function createStudyStartMethods(
  ctx: ClusterContext,
  { follow, followHere }: StudyFollowing,
): Pick<ApiHandlers, 'studyOptions' | 'startStudy'> {
  const { opts, home, presetsDir, projectDir, env, tokenEnvs, emit, viewOf, clientFor } = ctx;
  return {
    async studyOptions({ preset }) {
      return {
        variants: Object.keys(loadPreset(preset, presetsDir).variants ?? {}),
        shipByDefault: shipsByDefault(projectDir, env, RAY_PROJECT_ENV),
      };
    },

    async startStudy(req: ApiParsedRequest<'startStudy'>) {
      if (!req.preset) {
        throw new UserError(
          `preset: a study${req.ray ? ' on a cluster' : ''} starts from a preset; pick one above (a cloned run without one cannot be a study)`,
        );
      }
      const sets = studySets(req.preset, req.config, req.sets, presetsDir, opts.roots);
      if (!req.ray) {
        // this machine: the runs start through the host's launcher and slots, as single runs do
        if (!opts.launcher || !opts.slots) {
          throw new UserError('ray: this host starts no runs itself; give a Ray cluster, or run mars-lab study here');
        }
        const record = planStudy({
          preset: req.preset,
          variants: req.variants?.length ? req.variants : [null],
          seeds: [...new Set(req.seeds)],
          sets,
          where: { kind: 'local', parallel: opts.slots.max },
        });
        followHere(record, hostStudyLauncher(opts.launcher, opts.slots, emit));
        return { study: viewOf(record) };
      }
      const client = clientFor(req.ray.url, req.ray.tokenEnv);
      // unless told: shipped from a packaged app that names no project folder on the cluster (clusterShip.ts)
      const ship = req.ray.ship ?? shipsByDefault(projectDir, env, RAY_PROJECT_ENV);
      if (ship) checkShippable(projectDir);
      const record = planStudy({
        preset: req.preset,
        variants: req.variants?.length ? req.variants : [null],
        seeds: [...new Set(req.seeds)],
        sets,
        where: {
          kind: 'ray',
          url: client.where,
          rayHome: req.ray.rayHome ?? home,
          // shipped: the jobs start in the package's folder, so the entrypoint names no path of this machine
          project: ship ? '.' : env[RAY_PROJECT_ENV] || projectDir,
          node: env[RAY_NODE_ENV] || 'node',
          cpusPerJob: req.ray.cpusPerJob ?? 1,
          ...(req.ray.gpusPerJob ? { gpusPerJob: req.ray.gpusPerJob } : {}),
          ...(req.ray.sharedPaths ? { sharedModels: true as const } : {}),
          ...fetchRule(req.ray),
        },
      });
      await client.version(); // unreachable or not Ray: one line, and nothing recorded or submitted
      if (ship && record.where.kind === 'ray') {
        // packed and uploaded before the study is recorded: a package over the cap is one line, nothing recorded
        const uri = await shipForStudy(client, { root: projectDir, home, emit, cap: opts.shipCap });
        record.where.runtimeEnv = { working_dir: uri };
      }
      if (req.ray.tokenEnv) tokenEnvs.set(record.id, req.ray.tokenEnv);
      follow(record, client);
      return { study: viewOf(record) };
    },
  };
}
