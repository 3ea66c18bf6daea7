/**
 * `npx tsx tests/study/marsOverflowBase.ts`: the base for the mars-overflow worlds (issue 17). The shipped base
 * (resources/mars/base-tiny) learned its System 1 role on windows of at most 96 tokens; on mars-overflow's 176-token
 * windows it writes sentences that are not in its window (measured: 0 of its System 1 outputs held a support sentence).
 * Rather than pretrain from random weights again (36 min on an idle 2-core VM), this continues base-tiny's supervised
 * pretraining (engine/runs/presets/pretrain.ts's loop: the same data, loss and optimiser) on the preset's own pretraining data,
 * whose pages and System 1 windows have the overflow lengths, and writes the result as a base checkpoint.
 *
 *   npx tsx tests/study/marsOverflowBase.ts [--preset mars-overflow] [--steps 600] [--from resources/mars/base-tiny]
 *       [--out resources/mars/base-tiny-overflow]
 *
 * `--probe CKPT[,CKPT…]` instead measures whether each checkpoint can read the preset's pages in its System 1 role:
 * for 128 hops of held-out questions, one greedy System 1 call on a window holding the hop's support page with the
 * entity's name as purpose; it prints the share of outputs whose complete sentences are all sentences of the window
 * (faithful copies), the share holding the hop's support sentence, and the share naming an entity absent from the window.
 */
import fs from 'node:fs';
import { algorithmFor } from '../../engine/runs/registry';
import { loadCheckpoint, saveCheckpoint } from '../../engine/model/formats/checkpoint';
import { padBatch } from '../../engine/model/logProbs';
import { maskedNll } from '../../engine/model/supervised';
import { Rng } from '../../engine/random/prng';
import { generateWith } from '../../engine/policy/endpointPolicy';
import type { MarsConfig } from '../../engine/mars/configSchema';
import { containsTokens, supportSentences } from '../../engine/mars/sys1Measures';
import { marsFormat } from '../../engine/mars/questionSets';
import { generateWorld } from '../../engine/mars/world';
import { evalWorldSeeds } from '../../engine/mars/worldSplits';
import { Adam } from '../../engine/rl/adam';
import { adamVariables } from '../../engine/rl/policyUpdate';
import { resolvePresetConfig } from '../../engine/runs/presets/presets';
import { initBackend, tf } from '../../engine/tensor/backend';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}

const preset = arg('preset', 'mars-overflow');
const steps = Number(arg('steps', '600'));
const from = arg('from', 'resources/mars/base-tiny');
const out = arg('out', 'resources/mars/base-tiny-overflow');

async function main() {
  const backend = (await initBackend()).chosen;
  const config = resolvePresetConfig(preset, [`model.from={"kind":"checkpoint","path":"${out}"}`]);
  const algorithm = algorithmFor(config);
  const { model } = await loadCheckpoint(from);
  const data = new Rng(config.seed).split('pretrain').split('continue');
  const opt = new Adam(adamVariables(model), { lr: config.pretrain.lr, maxGradNorm: config.rl.gradClip });
  const names = new Map([...model.params].map(([n, v]) => [v.name, n]));
  const t0 = Date.now();
  let loss = NaN;
  const losses: number[] = [];
  for (let step = 1; step <= steps; step++) {
    const examples = algorithm.pretrainBatch!(config, data, config.pretrain.batch);
    const batch = padBatch(examples.map((e) => e.tokens));
    const mask = tf.tensor2d(
      examples.flatMap((e) => [...e.lossMask, ...Array<number>(batch.width - e.tokens.length).fill(0)]),
      [examples.length, batch.width],
    );
    const { value, grads } = tf.variableGrads(() => maskedNll(model, batch, mask), model.variables());
    loss = (await value.data())[0]!;
    losses.push(loss);
    const named = Object.fromEntries(Object.entries(grads).map(([k, g]) => [names.get(k) ?? k, g]));
    await opt.step(named);
    tf.dispose([value, mask, ...Object.values(grads)]);
    if (step % 25 === 0) {
      const recent = losses.slice(-25).reduce((a, b) => a + b, 0) / 25;
      console.log(`step ${step}/${steps}: loss ${recent.toFixed(4)} (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
    }
  }
  const seconds = (Date.now() - t0) / 1000;
  fs.rmSync(out, { recursive: true, force: true });
  await saveCheckpoint(out, model, {
    trainerState: {
      kind: 'base',
      algorithm: config.algorithm,
      step: steps,
      config,
      pretrainLoss: loss,
      continuedFrom: from,
      note: `continued pretraining of ${from} for ${steps} steps on the ${preset} preset's pretraining data (tests/study/marsOverflowBase.ts), ${seconds.toFixed(0)} s on backend ${backend}`,
    },
    files: algorithm.checkpointFiles(config),
  });
  console.log(`wrote ${out}: ${steps} steps, final loss ${loss.toFixed(4)}, ${seconds.toFixed(0)} s`);
  model.dispose();
  opt.dispose();
}

/** Can `ckpt` read the preset's pages as System 1? (see the file's opening comment) */
async function probe(ckpt: string): Promise<void> {
  const cfg = resolvePresetConfig(preset) as MarsConfig;
  const format = marsFormat();
  const windows: { prompt: number[]; page: string; sentence: string }[] = [];
  const names = new Set<string>();
  for (const seed of evalWorldSeeds(cfg.task.worldSeed, cfg.task.evalWorlds)) {
    const w = generateWorld(seed, cfg.task.world);
    for (const e of w.entities) names.add(e.name);
    const pagesById = new Map(w.pages.map((p) => [p.id, p]));
    const byId = new Map(w.entities.map((e) => [e.id, e.name]));
    for (const q of w.questions.filter((x) => cfg.task.families.includes(x.family))) {
      supportSentences(q, pagesById, byId).forEach((sentence, i) => {
        const page = pagesById.get(q.support[i]!)!;
        if (sentence === null || windows.length >= 128 || i > 0) return;
        const purpose = format.encode(q.text).slice(0, cfg.mars.purposeMax);
        windows.push({
          prompt: [...format.sys1Head(purpose), ...format.encode(page.text), format.ids.sep],
          page: page.text,
          sentence,
        });
      });
    }
  }
  const { model } = await loadCheckpoint(ckpt);
  const gens = await generateWith(
    model,
    windows.map((w) => w.prompt),
    { maxNewTokens: cfg.mars.sys1ResponseMax, temperature: 0, stopTokens: [format.ids.eos], rng: new Rng(1) },
  );
  let faithful = 0;
  let support = 0;
  let alien = 0;
  gens.forEach((g, i) => {
    const text = g.tokens
      .filter((t) => t !== format.ids.eos)
      .map((t) => format.decode([t]))
      .join(' ');
    const sentences = text.split(/(?<= \.) /).filter((x) => x.endsWith(' .'));
    if (sentences.length > 0 && sentences.every((x) => containsTokens(windows[i]!.page, x))) faithful++;
    if (containsTokens(text, windows[i]!.sentence)) support++;
    if (text.split(' ').some((t) => names.has(t) && !windows[i]!.page.split(' ').includes(t))) alien++;
  });
  const n = windows.length;
  console.log(
    `${ckpt} on ${preset} System 1 windows (${n}): faithful copies ${(faithful / n).toFixed(3)}, with the support sentence ${(support / n).toFixed(3)}, naming an entity not in the window ${(alien / n).toFixed(3)}`,
  );
  model.dispose();
}

const probeList = arg('probe', '');
if (probeList) {
  await initBackend();
  for (const ck of probeList.split(',')) await probe(ck);
} else {
  await main();
}
