/**
 * A Ray job that could not start train gets a message naming the fix (engine/cluster/studies/rayStudy.ts setupHint), not the
 * last line of node's stack ("Node.js v20…"): no project at the entrypoint's path (with a project path, or with a
 * working_dir that is not a mars-lab package), no node on the cluster's PATH; other failures keep their own line.
 */
import { describe, expect, it } from 'vitest';
import { setupHint } from '../../../engine/cluster/studies/rayStudy';
import { planRayStudy, type RayWhere } from '../../ray/rayStudyPlan';

const study = (where: Partial<RayWhere>) => planRayStudy('seqgrpo-copy', [], where);

const nodeMissingModule = (file: string) => [
  'Running entrypoint for job raysubmit_1: node /opt/mars-lab/engine/bin/mars-lab.mjs train --preset seqgrpo-copy',
  'node:internal/modules/cjs/loader:1228',
  '  throw err;',
  '  ^',
  '',
  `Error: Cannot find module '${file}'`,
  '    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)',
  "  code: 'MODULE_NOT_FOUND',",
  '  requireStack: []',
  '}',
  '',
  'Node.js v20.20.2',
];

describe('setupHint', () => {
  it('names --ship or --ray-project when the cluster has no project at the path', () => {
    expect(setupHint(nodeMissingModule('/opt/mars-lab/engine/bin/mars-lab.mjs'), study({}))).toBe(
      'the cluster has no /opt/mars-lab/engine/bin/mars-lab.mjs: add --ship to send the project with the jobs, or give its folder there with --ray-project PATH',
    );
    expect(
      setupHint(nodeMissingModule('/tmp/ray/working_dir_files/x/engine/bin/mars-lab.mjs'), study({ project: '.' })),
    ).toMatch(
      /^the job's working_dir has no .*: the runtime_env's working_dir is not a mars-lab package \(add --ship\)$/,
    );
  });

  it('names --ray-node when the shell finds no node', () => {
    expect(setupHint(['/bin/sh: 1: node: not found'], study({}))).toBe(
      "node not found on the cluster: install Node.js 20 on its nodes' PATH, or give its path there with --ray-node PATH",
    );
    expect(
      setupHint(['bash: /opt/node-20/bin/node: No such file or directory'], study({ node: '/opt/node-20/bin/node' })),
    ).toMatch(/^\/opt\/node-20\/bin\/node not found on the cluster: /);
  });

  it('leaves other failures to their own line', () => {
    expect(setupHint(['mars-lab: --set budget.steps=x: not a number'], study({}))).toBeUndefined();
    expect(setupHint(["Error: Cannot find module 'zod'"], study({}))).toBeUndefined();
  });
});
