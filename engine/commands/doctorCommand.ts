/** `doctor`: which TensorFlow.js backend this machine gets, and why not the others. */
import type { Command } from 'commander';
import { initBackend, type BackendName, type BackendReport } from '../tensor/backend';
import { ENGINE_VERSION } from '../version';
import { backendOption } from './options';

function formatDoctor(r: BackendReport): string {
  const lines = [`backend: ${r.chosen}${r.forced ? ' (forced with --backend)' : ''}`];
  for (const a of r.attempts) lines.push(`  ${a.backend.padEnd(10)} ${a.status.padEnd(16)} ${a.package === '-' ? '' : a.package + ': '}${a.detail}`);
  lines.push(`threads: ${r.threads} (${r.threadsDetail})`);
  if (r.simd !== null) lines.push(`wasm SIMD: ${r.simd ? 'yes' : 'no'}`);
  lines.push(`platform: ${r.platform}, ${r.cpus} CPU cores`);
  lines.push(`versions: mars-lab ${ENGINE_VERSION}, ${Object.entries(r.versions).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  return lines.join('\n');
}

export function registerDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description('show which TensorFlow.js backend is chosen, why the others are not, threads and versions')
    .option('--json', 'print JSON')
    .addOption(backendOption())
    .action(async (opts: { json?: boolean; backend?: BackendName }) => {
      const report = await initBackend({ force: opts.backend });
      console.log(opts.json ? JSON.stringify({ engine: ENGINE_VERSION, ...report }, null, 2) : formatDoctor(report));
    });
}
