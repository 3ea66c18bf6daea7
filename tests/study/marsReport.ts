/**
 * The MARS study's report (issue 17), built from its parts (tests/study/studyParts.ts): the claims table first —
 * full MARS against each ablation on the same base, the paper's process claims (multi-hop gains, search growth, System 1
 * learning to keep the support fact, the purpose), the gap against page length, each arm against its base and chance
 * — then per-arm figures with cluster-robust standard errors, the paired comparisons, and the tables of the figures.
 *
 * Arms are `<preset>:<variant>[@<base folder>]`. Arm-vs-arm claims compare arms of one preset and one base, on the same
 * questions; they hold only when the seed test and the world test both reject (studyParts.ts `armVerdict`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { claimRow, claimsTable, type ClaimRow } from './stats/claims';
import { holmMarked } from './claimsHolm';
import { DEFAULT_ALPHA, pairedSeedsVerdict, seedsVerdict, shiftVerdict } from './stats/verdict';
import { MARS_FAMILIES } from '../../engine/mars/configSchema';
import {
  armVerdict,
  f3,
  mean,
  overBase,
  overChance,
  pairedTableLines,
  perArmTableLines,
  type Part,
} from './studyParts';

/** `<preset>:<variant>[@base]` → its parts. */
function parseArm(arm: string): { preset: string; variant: string; base: string } {
  const m = /^([^:]+):([^@]+)(?:@(.+))?$/.exec(arm);
  if (!m) throw new Error(`${arm}: not a MARS study arm (<preset>:<variant>[@<base>])`);
  return { preset: m[1]!, variant: m[2]!, base: m[3] ?? '' };
}
const armName = (preset: string, variant: string, base: string) => `${preset}:${variant}${base ? `@${base}` : ''}`;

const ABLATION_TEXT: Record<string, string> = {
  'sys1-off': 'System 1 off (System 2 reads the raw pages cut to its budget)',
  'sys1-frozen': 'System 1 frozen (only System 2 learns)',
  'sys1-separate': 'separate parameters for System 1',
  'pool-joint': 'one joint advantage pool for both systems',
  'precompute-off': 'balancing before normalising (System 1 advantages not precomputed on the full pool)',
};

const stat = (xs: number[] | undefined, digits = 3) => {
  if (!xs?.length) return '–';
  const m = mean(xs);
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1)) : 0;
  return xs.length > 1 ? `${m.toFixed(digits)} ± ${sd.toFixed(digits)}` : m.toFixed(digits);
};

function claimRows(parts: readonly Part[]): ClaimRow[] {
  const find = (preset: string, variant: string, base: string) =>
    parts.find((p) => p.arm === armName(preset, variant, base));
  const rows: ClaimRow[] = [];
  const fulls = parts.filter((p) => parseArm(p.arm).variant === 'full');
  // full MARS against each ablation of the same preset and base
  for (const full of fulls) {
    const { preset, base } = parseArm(full.arm);
    for (const other of parts) {
      const o = parseArm(other.arm);
      if (o.preset !== preset || o.base !== base || o.variant === 'full') continue;
      const where = `(held-out exact match; ${preset}${base ? `, base ${base}` : ''})`;
      // v2's claim runs the other way: its advantage-weighted balancing beats v1's uniform one (full)
      const v2 = o.variant === 'balance-advweighted';
      const v = v2 ? armVerdict(other, full, 'exactMatch') : armVerdict(full, other, 'exactMatch');
      const text = v2
        ? `Advantage-weighted System 1 balancing (v2) beats uniform balancing (full MARS) ${where}`
        : `Full MARS beats ${ABLATION_TEXT[o.variant] ?? o.variant} ${where}`;
      rows.push(claimRow(text, v.result, v.figures));
    }
  }
  for (const full of fulls) {
    const x = full.trained.metrics;
    const b = full.base.metrics;
    const where = parseArm(full.arm);
    const tag = `${where.preset}${where.base ? `, base ${where.base}` : ''}`;
    const gap = (x.multiHopExactMatch ?? []).map(
      (m, i) =>
        m -
        (b.multiHopExactMatch?.[0] ?? NaN) -
        ((x.singleHopExactMatch?.[i] ?? NaN) - (b.singleHopExactMatch?.[0] ?? NaN)),
    );
    rows.push(
      claimRow(
        `Multi-hop gains exceed single-hop gains over the base (full MARS; ${tag})`,
        gap.length && gap.every(Number.isFinite) ? shiftVerdict(gap) : null,
        `multi-hop ${f3(mean(x.multiHopExactMatch ?? []) - (b.multiHopExactMatch?.[0] ?? NaN))}, single-hop ${f3(mean(x.singleHopExactMatch ?? []) - (b.singleHopExactMatch?.[0] ?? NaN))} (seeds only: the two kinds are different questions)`,
      ),
    );
    const paired = (text: string, after: string, before: string) => {
      const a = x[after] ?? [];
      const c = x[before] ?? [];
      rows.push(
        claimRow(
          `${text} (full MARS; ${tag})`,
          a.length && a.length === c.length ? pairedSeedsVerdict(a, c) : null,
          a.length ? `${f3(mean(c))} → ${f3(mean(a))}` : 'not measured',
        ),
      );
    };
    paired(
      'Search calls per question grow during training (first vs last fifth of the steps)',
      'train.searchesLast',
      'train.searchesFirst',
    );
    paired(
      'RL teaches System 1 to keep the support fact (share of its outputs holding one, first vs last fifth)',
      'train.sys1SupportShareLast',
      'train.sys1SupportShareFirst',
    );
    paired(
      "System 2's purpose helps System 1 (exact match, purpose stripped → given)",
      'exactMatch',
      'purposeStripped.exactMatch',
    );
  }
  // the scaling direction: the full − System 1 off gap is larger on longer pages (per seed, seed i of each arm)
  const gapOf = (preset: string, base: string) => {
    const f = find(preset, 'full', base)?.trained.metrics.exactMatch;
    const o = find(preset, 'sys1-off', base)?.trained.metrics.exactMatch;
    return f && o ? f.slice(0, Math.min(f.length, o.length)).map((v, i) => v - o[i]!) : null;
  };
  // on the presets' base, and on every other base both presets' full and System 1 off arms ran from
  const bases = ['', ...new Set(parts.map((p) => parseArm(p.arm).base).filter(Boolean))];
  for (const base of bases) {
    const short = gapOf('mars-overflow', base);
    const long = gapOf('mars-overflow-long', base);
    if (base && !(short?.length && long?.length)) continue;
    rows.push(
      claimRow(
        `System 1's advantage grows with page length (full − System 1 off: mars-overflow-long vs mars-overflow${base ? `, base ${base}` : ''})`,
        short?.length && long?.length ? seedsVerdict(long, short) : null,
        short && long ? `${f3(mean(short))} at 120–160-token pages, ${f3(mean(long))} at 240–320` : 'an arm not run',
      ),
    );
  }
  for (const p of parts) {
    const v = overBase(p, 'exactMatch');
    rows.push(claimRow(`${p.arm} beats its base (exact match)`, v?.result ?? null, v?.figures ?? 'not run'));
  }
  for (const p of parts) {
    const v = overChance(p, 'exactMatch');
    if (v) rows.push(claimRow(`${p.arm} beats chance (exact match)`, v.result, v.figures));
  }
  return rows;
}

/** Pairs for the paired table: full against every other arm of its preset and base. */
function pairsOf(parts: readonly Part[]): [string, string][] {
  return parts.flatMap((full) => {
    const f = parseArm(full.arm);
    if (f.variant !== 'full') return [];
    return parts
      .filter((o) => {
        const x = parseArm(o.arm);
        return x.preset === f.preset && x.base === f.base && x.variant !== 'full';
      })
      .map((o): [string, string] => [full.arm, o.arm]);
  });
}

export function writeMarsReport(all: readonly Part[], out: string): void {
  // an arm that another process has only just begun (its base evaluated, no seed trained yet) waits for its first seed
  const parts = all.filter((p) => p.trained.metrics.exactMatch?.length);
  const rows = [...parts.map((p) => p.base), ...parts.map((p) => p.trained)];
  const loads = parts.flatMap((p) => p.load ?? []);
  const families = MARS_FAMILIES.filter((f) => rows.some((r) => r.metrics[`exactMatch.${f}`]));
  const familyCols = families.flatMap((f) => [`exactMatch.${f}`, `f1.${f}`]);
  const m = (r: (typeof rows)[number]) => r.metrics;
  const pair = (r: (typeof rows)[number], a: string, b: string, d = 3) =>
    m(r)[a] ? `${stat(m(r)[a], d)} → ${stat(m(r)[b], d)}` : '–';
  const lines = [
    '# MARS study (`npm run study:mars`)',
    '',
    `Commands (arms run as parallel processes, one core each): ${[...new Set(parts.map((p) => p.cmd))].map((c) => `\`${c}\``).join('; ')}.`,
    `Steps ${[...new Set(parts.map((p) => p.steps))].join(' or ')}, seeds ${[...new Set(parts.map((p) => p.seeds))].join(' or ')}, ${[...new Set(parts.map((p) => p.items))].join(' or ')} held-out questions (worlds never trained on), ${new Set(parts.flatMap((p) => p.worlds ?? [])).size} held-out worlds across the presets. Seeds are numbered from 1 (config \`seed\` 1, 2, …): a preset's own run, \`train --preset\`, is seed 0, which no arm here ran.`,
    `Machine: ${parts[0]!.machine}${loads.length ? `; 1-minute load average while training ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}, mean ${mean(loads).toFixed(1)}` : ''}. Date: ${new Date().toISOString().slice(0, 10)}. Minutes per arm: ${parts.map((p) => `${p.arm} ${p.minutes.toFixed(1)}`).join(', ')}.`,
    '',
    "Each arm is its preset's variant (`npx mars-lab presets` lists them), trained from the base named after `@` (else the preset's own), with only seed, steps and evaluation size changed. Figures are mean ± sample sd over seeds of one greedy evaluation of the final checkpoint; the base rows are one deterministic evaluation, as that arm evaluates (System 1 off evaluates with it off).",
    '',
    "## The paper's claims, as measured",
    '',
    ...claimsTable(claimRows(parts), {
      alpha: DEFAULT_ALPHA,
      rule: "An arm-vs-arm claim, or an arm against its base or chance, holds only when the test across seeds (exact permutation of per-seed means) and the test across questions (sign flips over worlds of the paired per-question differences of seed-averaged scores) both reject, and does not hold only when both reject against it. Claims about one arm over training use the exact sign-flip test over seeds. Chance: a guess among the world's candidates of the answer's kind (1/2 for comparisons; tests/study/marsItems.ts).",
    }),
    '',
    '## Held-out exact match, clustered in worlds',
    '',
    ...perArmTableLines(parts, ['exactMatch'], 'exactMatch'),
    '',
    '## Paired comparisons on the same questions',
    '',
    ...pairedTableLines(parts, pairsOf(parts), ['exactMatch']),
    '',
    '## Held-out exact match and F1',
    '',
    '| arm | exact match | F1 | single-hop EM | multi-hop EM | train reward first → last fifth | s/step |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${stat(m(r).exactMatch)} | ${stat(m(r).f1)} | ${stat(m(r).singleHopExactMatch)} | ${stat(m(r).multiHopExactMatch)} | ${pair(r, 'train.rewardFirst', 'train.rewardLast')} | ${stat(m(r)['train.stepSeconds'], 1)} |`,
    ),
    '',
    '## Per question family (exact match / F1)',
    '',
    `| arm | ${families.map((f) => `${f} EM | ${f} F1`).join(' | ')} |`,
    `|---|${familyCols.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.name} | ${familyCols.map((k) => stat(m(r)[k])).join(' | ')} |`),
    '',
    '## Cost: tokens, searches, System 1 calls (held-out evaluation)',
    '',
    '| arm | System 2 tokens / question | System 1 tokens / question | searches / question | System 1 calls / search | train searches / question first → last fifth |',
    '|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${stat(m(r).sys2TokensPerQuestion, 1)} | ${stat(m(r).sys1TokensPerQuestion, 1)} | ${stat(m(r).searchesPerQuestion, 2)} | ${stat(m(r).sys1CallsPerSearch, 2)} | ${pair(r, 'train.searchesFirst', 'train.searchesLast', 2)} |`,
    ),
    '',
    '## What System 1 writes and System 2 reads (held-out evaluation; engine/mars/sys1Measures.ts)',
    '',
    '| arm | System 1 outputs with the gold answer | with a support-fact sentence | tokens per output | <info> with a support-fact sentence | <info> with the gold answer | train: System 1 outputs with a support sentence, first → last fifth | train: <info> with a support sentence, first → last fifth | purpose stripped: outputs with a support sentence | purpose stripped: exact match |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${stat(m(r).sys1GoldAnswerShare)} | ${stat(m(r).sys1SupportShare)} | ${stat(m(r).sys1OutputTokens, 1)} | ${stat(m(r).infoSupportShare)} | ${stat(m(r).infoGoldAnswerShare)} | ${pair(r, 'train.sys1SupportShareFirst', 'train.sys1SupportShareLast')} | ${pair(r, 'train.infoSupportShareFirst', 'train.infoSupportShareLast')} | ${stat(m(r)['purposeStripped.sys1SupportShare'])} | ${stat(m(r)['purposeStripped.exactMatch'])} |`,
    ),
    '',
    'With System 1 off, <info> is the raw pages cut to mars.rawInfoBudget tokens, so its columns say how often the fact survived the cut. A support-fact sentence is the sentence of a support page that states one hop of the question (its gold reasoning chain).',
    '',
  ];
  // hand-written notes follow the generated part: <name>.notes.md beside <name>.md
  const notes = path.join(path.dirname(out), `${path.basename(out, '.md')}.notes.md`);
  if (fs.existsSync(notes)) lines.push(fs.readFileSync(notes, 'utf8'));
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, holmMarked(out, lines.join('\n')));
}
