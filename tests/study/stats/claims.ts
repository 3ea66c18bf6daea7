/**
 * The claims table a study report leads with (issue 17): each paper claim → holds / does not hold / inconclusive
 * (or "not measurable here"), with the figures it rests on and the test that decided it. Used by both study scripts
 * (tests/study/marsStudy.ts, tests/study/martiStudy.ts), so their tables read the same way.
 */
import { z } from 'zod';
import type { Verdict } from './verdict';

export const claimRowSchema = z.strictObject({
  claim: z.string().min(1),
  verdict: z.enum(['holds', 'does not hold', 'inconclusive', 'not measurable here']),
  figures: z.string(),
  test: z.string(),
});
export type ClaimRow = z.infer<typeof claimRowSchema>;

/** A row from a decided test, or "not measurable here" (with why, in `figures`) when there is none. */
export function claimRow(claim: string, result: { verdict: Verdict; test: string } | null, figures: string): ClaimRow {
  return result
    ? { claim, verdict: result.verdict, figures, test: result.test }
    : { claim, verdict: 'not measurable here', figures, test: '–' };
}

/** Markdown table cells: no pipes or line breaks inside a cell. */
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');

/**
 * The table as markdown lines: a sentence stating the rule, then | claim | verdict | figures | test |. The rule
 * sentence names α; `rule` may add how multi-test claims are combined.
 */
export function claimsTable(rows: readonly ClaimRow[], opts: { alpha: number; rule?: string }): string[] {
  for (const r of rows) claimRowSchema.parse(r);
  return [
    `Each claim is decided by one-sided tests at α = ${opts.alpha}: **holds** when the test in the claim's direction rejects, **does not hold** when the test against it rejects, **inconclusive** when neither does.${opts.rule ? ` ${opts.rule}` : ''}`,
    '',
    '| claim | verdict | figures | test |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${cell(r.claim)} | **${r.verdict}** | ${cell(r.figures)} | ${cell(r.test)} |`),
  ];
}
