/**
 * The MARTI study's claims table (issue 17): the paper's claims first (heterogeneous > homogeneous > single, under
 * T+ too, diversity), then the issue-17 arms' comparisons, each arm against its base and against a random program.
 * Parts, verdicts and the other tables are tests/study/studyParts.ts, shared with the MARS study.
 */
import { claimRow, claimsTable, type ClaimRow } from './stats/claims';
import { DEFAULT_ALPHA } from './stats/verdict';
import { armVerdict, f3, mean, overBase, overChance, short, type Part } from './studyParts';

export { armVerdict, pairedTableLines, partSchema, perArmTableLines, type Part, type Row } from './studyParts';

/** '' (the shipped base), then the `@<base folder>` of every arm trained from another base (`marti-homo@base-tiny-s1`). */
export function armBases(parts: readonly Part[]): string[] {
  return ['', ...new Set(parts.flatMap((p) => /@.+$/.exec(p.arm) ?? []))];
}

/** The ladder's and the update control's pairs (first arm − second) among the arms trained from one base. */
export const ladderPairs = (at: string): [string, string][] => [
  [`marti-homo${at}`, `marti-single${at}`],
  [`marti-hetero${at}`, `marti-homo${at}`],
  [`marti-homo${at}`, `marti-homo-updates${at}`],
];

/** The claims table: the paper's claims first, then the issue-17 arms' comparisons, each arm against base and chance. */
export function claimsTableLines(parts: readonly Part[]): string[] {
  const arm = (preset: string) => parts.find((p) => p.arm === preset);
  const rows: ClaimRow[] = [];
  const order = (text: string, presets: string[], k: string) => {
    const ps = presets.map(arm);
    if (ps.some((p) => !p?.trained.metrics[k]?.length)) {
      rows.push(
        claimRow(
          text,
          null,
          `arm not run (${
            presets
              .filter((_, i) => !ps[i])
              .map(short)
              .join(', ') || k
          })`,
        ),
      );
      return;
    }
    const pairs = presets.slice(1).map((_, i) => {
      const v = armVerdict(ps[i + 1]!, ps[i]!, k);
      return { ...v, label: `${short(presets[i + 1]!)} > ${short(presets[i]!)}` };
    });
    const verdict = pairs.every((p) => p.result.verdict === 'holds')
      ? 'holds'
      : pairs.some((p) => p.result.verdict === 'does not hold')
        ? 'does not hold'
        : 'inconclusive';
    rows.push({
      claim: text,
      verdict,
      figures: presets.map((p) => `${short(p)} ${f3(mean(arm(p)!.trained.metrics[k]!))}`).join(', '),
      test: pairs.map((p) => `${p.label} (${p.result.verdict}): ${p.result.test}`).join('; '),
    });
  };
  // the ladder from the shipped base, then from every other base an arm was trained from (`marti-homo@base-tiny-s1`)
  const bases = armBases(parts);
  const ladder = (at: string) => {
    const three = ['marti-single', 'marti-homo', 'marti-hetero'].map((a) => a + at);
    if (!three.some(arm)) return;
    const from = at ? `, from ${at.slice(1)}` : '';
    order(`Heterogeneous beats homogeneous beats single-agent GRPO on held-out pass@1${from}`, three, 'pass1');
    order(`The same order under T+ (T+ pass@1)${from}`, three, 'tplus.pass1');
    order(
      `Diversity rises from single to homogeneous to heterogeneous (within-tree edit distance)${from}`,
      three,
      'div.editDistance',
    );
  };
  for (const at of bases) ladder(at);
  const pair = (text: string, hi: string, lo: string, k: string) => {
    const a = arm(hi);
    const b = arm(lo);
    if (!a || !b || !a.trained.metrics[k]?.length || !b.trained.metrics[k]?.length) return;
    const v = armVerdict(a, b, k);
    rows.push(claimRow(text, v.result, v.figures));
  };
  pair(
    'Heterogeneous from different bases beats homogeneous (held-out pass@1)',
    'marti-hetero-bases',
    'marti-homo',
    'pass1',
  );
  pair('… and with search (best of an 8-node tree)', 'marti-hetero-bases', 'marti-homo', 'bestOfTree');
  pair(
    'Heterogeneous from different bases beats the update-matched homogeneous control (pass@1)',
    'marti-hetero-bases',
    'marti-homo-updates',
    'pass1',
  );
  pair(
    'Two different bases beat two copies of one base (heterogeneous, pass@1)',
    'marti-hetero-bases',
    'marti-hetero',
    'pass1',
  );
  for (const at of bases) {
    pair(
      `Homogeneous beats its update-matched control (more updates help, pass@1)${at ? `, from ${at.slice(1)}` : ''}`,
      `marti-homo${at}`,
      `marti-homo-updates${at}`,
      'pass1',
    );
  }
  pair(
    'Heterogeneous from different bases beats homogeneous from the second base alone (pass@1)',
    'marti-hetero-bases',
    'marti-homo@base-tiny-s1',
    'pass1',
  );
  for (const p of parts) {
    const v = overBase(p, 'pass1');
    rows.push(claimRow(`${p.arm} beats its base on held-out pass@1`, v?.result ?? null, v?.figures ?? 'arm not run'));
  }
  for (const p of parts) {
    const v = overChance(p, 'pass1');
    if (v) rows.push(claimRow(`${p.arm} beats a random program (pass@1)`, v.result, v.figures));
  }
  return claimsTable(rows, {
    alpha: DEFAULT_ALPHA,
    rule: 'A comparison of arms, or of an arm with its base or with chance, holds only when the test across seeds and the test across problems (sign flips over worlds on the paired per-problem differences of seed-averaged scores) both reject, and does not hold only when both reject against it; an ordering holds when each of its comparisons holds.',
  });
}
