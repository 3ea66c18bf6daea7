/**
 * `npm run check:presets`: every preset that declares a success criterion is run at each of its seeds, unchanged but
 * for the seed, and its promise is checked (engine/runs/presets/presetCheck.ts). A figure, not a test: the MARS and MARTI
 * presets take 10–15 minutes a seed on 2 cores. The fast ones are also checked by `npm test`
 * (tests/integration/presetPromise.test.ts).
 *
 *   npm run check:presets -- [--presets seqgrpo-copy,seqgrpo-increment] [--seeds 0,1,2] [--md FILE]
 *
 * Exit code 1 when a promise fails at any seed; each seed's line says the value it reached and when.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkPresetPromise, type PromiseCheck } from '../../engine/runs/presets/presetCheck';
import { listPresets } from '../../engine/runs/presets/presets';
import { initBackend } from '../../engine/tensor/backend';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function main(): Promise<void> {
  const backend = (await initBackend()).chosen;
  const wanted = arg('presets')?.split(',');
  const seeds = arg('seeds')?.split(',').map(Number);
  const presets = listPresets().filter((p) => p.success && (!wanted || wanted.includes(p.name)));
  if (wanted && presets.length !== wanted.length) {
    throw new Error(`--presets: not every name is a preset with a success criterion (${wanted.join(', ')})`);
  }
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-presets-'));
  const checks: PromiseCheck[] = [];
  try {
    for (const preset of presets) {
      console.log(`${preset.name}: ${preset.success!.metric} ≥ ${preset.success!.atLeast}`);
      checks.push(
        await checkPresetPromise(home, preset, {
          seeds,
          onSeed: (o) =>
            console.log(
              `  seed ${o.seed}: ${o.value === null ? 'never evaluated' : `${o.value.toFixed(3)} at step ${o.step}`} ${o.passed ? 'ok' : 'FAILS'} (${o.seconds.toFixed(1)} s)`,
            ),
        }),
      );
    }
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
  const md = arg('md');
  if (md) {
    const rows = checks.flatMap((c) =>
      c.outcomes.map(
        (o) =>
          `| ${c.preset} | ${c.metric} ≥ ${c.atLeast} | ${o.seed} | ${o.value?.toFixed(3) ?? '–'} | ${o.passed ? 'yes' : 'no'} | ${o.seconds.toFixed(1)} |`,
      ),
    );
    const text = [
      `Command: \`npm run check:presets -- ${process.argv.slice(2).join(' ')}\` (${backend} backend, ${os.cpus().length} cores, Node ${process.version}, ${new Date().toISOString().slice(0, 10)})`,
      '',
      '| preset | promise | seed | last evaluation | holds | seconds |',
      '| --- | --- | --- | --- | --- | --- |',
      ...rows,
      '',
    ].join('\n');
    fs.writeFileSync(md, text);
  }
  const failed = checks.filter((c) => !c.passed).map((c) => c.preset);
  console.log(failed.length ? `promise broken: ${failed.join(', ')}` : `every promise held (${checks.length} presets)`);
  process.exitCode = failed.length ? 1 : 0;
}

await main();
