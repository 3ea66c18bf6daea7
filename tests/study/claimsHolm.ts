/**
 * Holm–Bonferroni over each claims table in docs/results/ (issue 32: "with ~120 claims rows, say in each claims table
 * how many comparisons it holds and which survive a Holm correction").
 *
 * It reads the committed markdown tables, not the parts: a table whose header starts `| claim` is a claims table. Two
 * layouts are read:
 * - generated (tests/study/stats/claims.ts): `| claim | verdict | figures | test |`, each test written as
 *   "one-sided p = P for the claim (Q against it)"; an ordering row holds several comparisons, each introduced by
 *   "A > B (verdict):";
 * - hand-written summaries (docs/results/mars.md, marti.md): `seeds p` and `worlds p` columns holding "P / Q" (for the
 *   claim / against it), "P (for)", "P (against)", "P and Q" or a bare P, one per comparison, comparisons separated by
 *   ";" or ",". A row that summarises several arms in ranges ("0.031–0.625", "≥ 0.44", "≤ 0.047") or whose claim
 *   starts "Each" is not split here: its comparisons are those of the generated table it summarises.
 *
 * The rule for a comparison whose verdict needs two tests (seeds and worlds) to both reject: its p is the larger of the
 * two in the verdict's direction (an intersection–union test rejects exactly when that larger p is ≤ α); an
 * inconclusive comparison takes the smaller of its two directions' larger p. Holm then runs over every comparison of
 * one table at α = 0.05. The printed p-values are those the tables print (three decimals or two significant digits),
 * so a p at a table's rounding edge is taken as printed.
 *
 *   npx tsx tests/study/claimsHolm.ts [files…] [--json] [--write]
 *
 * --write puts one line under each table ("N comparisons; M reject at 0.05; K survive …") and marks each row with a
 * rejection that does not survive, replacing the line and marks an earlier --write put there.
 */
import fs from 'node:fs';
import path from 'node:path';

export const ALPHA = 0.05;

/** Holm's step-down procedure: which of `ps` (in their order) are rejected at `alpha`, and their adjusted p-values. */
export function holm(ps: readonly number[], alpha = ALPHA): { reject: boolean[]; adjusted: number[] } {
  for (const p of ps) if (!(p >= 0 && p <= 1)) throw new Error(`holm: p-value ${p} is not in [0, 1]`);
  const m = ps.length;
  const order = ps.map((p, i) => ({ p, i })).sort((a, b) => a.p - b.p || a.i - b.i);
  const reject: boolean[] = new Array<boolean>(m).fill(false);
  const adjusted: number[] = new Array<number>(m).fill(1);
  let running = 0;
  let stopped = false;
  order.forEach(({ p, i }, k) => {
    running = Math.max(running, Math.min(1, (m - k) * p));
    adjusted[i] = running;
    if (!stopped && p <= alpha / (m - k)) reject[i] = true;
    else stopped = true;
  });
  return { reject, adjusted };
}

export type Verdict = 'holds' | 'does not hold' | 'inconclusive';
/** One one-sided test pair: p for the claim, p against it (null where the table gives only one direction). */
export interface TestP {
  forP: number | null;
  againstP: number | null;
}
/** A hand cell's test before its direction is known: a bare p takes the verdict's direction. */
type RawTest = TestP & { bare?: number };
export interface Comparison {
  row: number; // 1-based row of the table
  claim: string;
  label: string; // the sub-comparison's label within its row ('' for a one-comparison row)
  verdict: Verdict;
  tests: TestP[];
  p: number; // the comparison's p by the rule above
}
export interface ClaimsTable {
  file: string;
  heading: string;
  headerLine: number; // 0-based line of the header
  lastLine: number; // 0-based line of the last row
  comparisons: Comparison[];
  summarised: { row: number; claim: string; why: string }[];
  /** comparisons whose stated verdict differs from the one their p-values give (a parse or table error) */
  mismatched: Comparison[];
}

const HOLM_MARK = / \((?:not )?after Holm[^)]*\)/g;
const LINE_RE = /^\d+ comparisons; .*`npx tsx tests\/study\/claimsHolm\.ts`/;
const NUM = String.raw`(?:\d+(?:\.\d+)?(?:e-?\d+)?)`;

const clean = (s: string) => s.replace(HOLM_MARK, '').replace(/\*\*/g, '').trim();
function splitRow(line: string): string[] {
  const cells = line
    .replace(/\\\|/g, '\u0000')
    .split('|')
    .map((c) => c.replace(/\u0000/g, '|').trim());
  return cells.slice(1, cells.length - 1);
}
const toVerdict = (s: string): Verdict | null => {
  const t = clean(s);
  if (t.startsWith('does not hold')) return 'does not hold';
  if (t.startsWith('holds')) return 'holds';
  if (t.startsWith('inconclusive')) return 'inconclusive';
  return null;
};

/** The comparison's p by the rule: the larger p in the verdict's direction; inconclusive: the smaller such p. */
export function comparisonP(verdict: Verdict, tests: readonly TestP[]): number {
  const dir = (k: 'forP' | 'againstP') => {
    const ps = tests.map((t) => t[k]);
    return ps.some((p) => p === null) ? null : Math.max(...(ps as number[]));
  };
  const f = dir('forP');
  const a = dir('againstP');
  if (verdict === 'holds') return f ?? 1;
  if (verdict === 'does not hold') return a ?? 1;
  return Math.min(f ?? 1, a ?? 1);
}

/** The verdict its p-values give (both directions known), else null. */
function verdictOf(tests: readonly TestP[]): Verdict | null {
  if (tests.some((t) => t.forP === null || t.againstP === null)) return null;
  if (tests.every((t) => t.forP! <= ALPHA)) return 'holds';
  if (tests.every((t) => t.againstP! <= ALPHA)) return 'does not hold';
  return 'inconclusive';
}

/** A generated row's test cell → its comparisons (label, verdict, tests). */
export function parseGeneratedTest(
  test: string,
  rowVerdict: Verdict,
): { label: string; verdict: Verdict; tests: TestP[] }[] {
  const subRe = /(?:^|; )([^;:()]+? > [^;:()]+?) \((holds|does not hold|inconclusive)\): /g;
  const starts: { at: number; end: number; label: string; verdict: Verdict }[] = [];
  for (const m of test.matchAll(subRe)) {
    starts.push({ at: m.index, end: m.index + m[0].length, label: m[1]!, verdict: m[2] as Verdict });
  }
  const pieces = starts.length
    ? starts.map((s, k) => ({ ...s, text: test.slice(s.end, starts[k + 1]?.at ?? test.length) }))
    : [{ label: '', verdict: rowVerdict, text: test }];
  const pRe = new RegExp(String.raw`one-sided p = (${NUM}) for the claim \((${NUM}) against it\)`, 'g');
  return pieces.map((s) => ({
    label: s.label,
    verdict: s.verdict,
    tests: [...s.text.matchAll(pRe)].map((m) => ({ forP: Number(m[1]), againstP: Number(m[2]) })),
  }));
}

/** A hand cell ("P / Q", "P (for)", "P (against)", "P and Q", bare P; parts split by ";" or ",") → tests in order. */
export function parseHandCell(
  cell: string,
  verdicts: readonly Verdict[],
): { label: string; tests: RawTest[] }[] | 'none' | 'summary' {
  // parenthetical remarks carry no test of the row ("(one single draw of Beta does not reject: 0.135)")
  const c = clean(cell).replace(
    /\s*\([^()]*(?:checkpoint|seeds cannot|different questions|single draw|per-problem)[^()]*\)/g,
    '',
  );
  if (/^[–-](\s|$)/.test(c.trim()) || c.trim() === '') return 'none';
  if (/[≥≤]|\d\s*[–]\s*\d/.test(c)) return 'summary';
  // several verdicts in the row, their p-values "a / b / c / d (for)": one direction per comparison
  const multi = new RegExp(String.raw`^\s*(${NUM}(?:\s*/\s*${NUM})+)\s*\((for|against)\)\s*$`).exec(c);
  if (multi && verdicts.length > 1) {
    const ps = multi[1]!.split('/').map((x) => Number(x.trim()));
    if (ps.length !== verdicts.length) return 'summary';
    return ps.map((p) => ({
      label: '',
      tests: [multi[2] === 'for' ? { forP: p, againstP: null } : { forP: null, againstP: p }],
    }));
  }
  const out: { label: string; tests: RawTest[] }[] = [];
  for (const part of c.split(/;|,(?=\s*[A-Za-z+]+\s)/)) {
    const pair = new RegExp(String.raw`^(.*?)(${NUM})\s*/\s*(${NUM})\s*$`).exec(part.trim());
    const one = new RegExp(String.raw`^(.*?)(${NUM})\s*(?:\((for|against)\))?\s*(?:\(.*\))?\s*$`).exec(part.trim());
    const and = new RegExp(String.raw`^(${NUM}) and (${NUM})$`).exec(part.trim());
    if (and) {
      for (const x of [and[1]!, and[2]!]) {
        out.push({ label: '', tests: [{ forP: null, againstP: null, bare: Number(x) }] });
      }
    } else if (pair) {
      out.push({
        label: pair[1]!.trim().replace(/:$/, ''),
        tests: [{ forP: Number(pair[2]), againstP: Number(pair[3]) }],
      });
    } else if (one) {
      const p = Number(one[2]);
      const t: RawTest =
        one[3] === 'against'
          ? { forP: null, againstP: p }
          : one[3] === 'for'
            ? { forP: p, againstP: null }
            : { forP: null, againstP: null, bare: p };
      out.push({ label: one[1]!.trim().replace(/:$/, ''), tests: [t] });
    } else return 'summary';
  }
  return out;
}

/** A bare p (no direction given) is the p in the verdict's direction. */
function resolveBare(t: RawTest, v: Verdict): TestP {
  if (t.bare === undefined) return { forP: t.forP, againstP: t.againstP };
  return v === 'does not hold' ? { forP: null, againstP: t.bare } : { forP: t.bare, againstP: null };
}

export function parseTables(file: string, text: string): ClaimsTable[] {
  const lines = text.split('\n');
  const tables: ClaimsTable[] = [];
  let heading = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^#+ /.test(line)) heading = line.replace(/^#+ /, '');
    if (!/^\|\s*claim\b/.test(line)) continue;
    const header = splitRow(line).map((h) => h.toLowerCase());
    const col = (name: string) => header.findIndex((h) => h.startsWith(name));
    const vCol = col('verdict');
    const testCol = col('test');
    const seedsCol = col('seeds p');
    const worldsCol = col('worlds p');
    const whereCol = col('where');
    const table: ClaimsTable = {
      file,
      heading,
      headerLine: i,
      lastLine: i,
      comparisons: [],
      summarised: [],
      mismatched: [],
    };
    let claimCarry = '';
    let row = 0;
    for (let j = i + 2; j < lines.length && lines[j]!.startsWith('|'); j++) {
      table.lastLine = j;
      row++;
      const cells = splitRow(lines[j]!);
      const claim = clean(cells[0] ?? '') || claimCarry;
      claimCarry = claim;
      const vText = clean(cells[vCol] ?? '');
      const verdicts = vText
        .split(/ \/ /)
        .map(toVerdict)
        .filter((v): v is Verdict => v !== null);
      if (!verdicts.length) continue; // not measurable here
      const add = (label: string, verdict: Verdict, tests: TestP[]) => {
        if (!tests.length) return;
        const c = { row, claim, label, verdict, tests, p: comparisonP(verdict, tests) };
        table.comparisons.push(c);
        const own = verdictOf(tests);
        if (own && own !== verdict) table.mismatched.push(c);
      };
      if (testCol >= 0 && seedsCol < 0) {
        for (const s of parseGeneratedTest(cells[testCol] ?? '', verdicts[0]!)) add(s.label, s.verdict, s.tests);
        continue;
      }
      if (/^each\b/i.test(claim) || /\ball four\b/.test(cells.join(' '))) {
        table.summarised.push({ row, claim, why: 'summarises several arms' });
        continue;
      }
      const seeds = parseHandCell(cells[seedsCol] ?? '–', verdicts);
      const worlds = parseHandCell(cells[worldsCol] ?? '–', verdicts);
      if (seeds === 'summary' || worlds === 'summary') {
        table.summarised.push({ row, claim, why: 'p-values given as a range' });
        continue;
      }
      const s = seeds === 'none' ? [] : seeds;
      const w = worlds === 'none' ? [] : worlds;
      const n = Math.max(s.length, w.length);
      if (s.length && w.length && s.length !== w.length) {
        table.summarised.push({
          row,
          claim,
          why: `seeds and worlds cells list ${s.length} and ${w.length} comparisons`,
        });
        continue;
      }
      for (let k = 0; k < n; k++) {
        const tests = [...(s[k]?.tests ?? []), ...(w[k]?.tests ?? [])];
        const rowV = verdicts.length === n ? verdicts[k]! : verdicts[0]!;
        const resolved = tests.map((t) => resolveBare(t, rowV));
        const v = verdictOf(resolved) ?? rowV;
        const whereParts = whereCol >= 0 ? clean(cells[whereCol] ?? '').split(' / ') : [];
        const fromWhere = n > 1 && whereParts.length === n ? whereParts[k]! : '';
        add(s[k]?.label || w[k]?.label || fromWhere || (n > 1 ? String(k + 1) : ''), v, resolved);
      }
    }
    tables.push(table);
  }
  return tables;
}

export interface TableResult {
  table: ClaimsTable;
  m: number;
  rejected: Comparison[];
  survive: Comparison[];
  lost: Comparison[];
  adjusted: Map<Comparison, number>;
}

export function correct(table: ClaimsTable, alpha = ALPHA): TableResult {
  const cs = table.comparisons;
  const { reject, adjusted } = holm(
    cs.map((c) => c.p),
    alpha,
  );
  const rejected = cs.filter((c) => c.verdict !== 'inconclusive');
  return {
    table,
    m: cs.length,
    rejected,
    survive: cs.filter((c, k) => reject[k] && c.verdict !== 'inconclusive'),
    lost: cs.filter((c, k) => !reject[k] && c.verdict !== 'inconclusive'),
    adjusted: new Map(cs.map((c, k) => [c, adjusted[k]!])),
  };
}

const name = (c: Comparison) => `${c.row}${c.label ? ` (${c.label})` : ''}`;
const fmtP = (p: number) => (p < 1e-3 ? p.toExponential(1) : p.toFixed(3));

/** The line under a table. */
export function holmLine(r: TableResult): string {
  const list = (cs: Comparison[]) => (cs.length ? cs.map(name).join(', ') : 'none');
  const summarised = r.table.summarised.length
    ? ` Rows ${r.table.summarised.map((s) => s.row).join(', ')} summarise several arms and are counted in the table they summarise, not here.`
    : '';
  return (
    `${r.m} comparisons; ${r.rejected.length} reject at 0.05; ${r.survive.length} survive a Holm correction over this table (${r.survive.length ? `rows ${list(r.survive)}, counted from the table's first row` : 'none'}) — \`npx tsx tests/study/claimsHolm.ts\`.` +
    ` A comparison whose verdict needs the seed and the world test both to reject takes the larger of the two p-values in the verdict's direction (an inconclusive one the smaller of its two directions' larger p); rows marked "not after Holm" reject at 0.05 but not after the correction.${summarised}`
  );
}

/** `text` appended to cell `col` (0-based) of a raw table row, the rest of the row byte for byte. */
export function insertInCell(line: string, col: number, text: string): string {
  const pipes: number[] = [];
  for (let k = 0; k < line.length; k++) if (line[k] === '|' && line[k - 1] !== '\\') pipes.push(k);
  const end = pipes[col + 1];
  if (end === undefined) return line;
  const before = line.slice(0, end).replace(/\s+$/, '');
  return `${before}${text} ${line.slice(end)}`;
}

/** Rewrite a file's tables: marks on rows whose rejections do not survive, the line under each table. */
export function writeMarks(text: string, results: readonly TableResult[]): string {
  const lines = text.split('\n');
  // from the last table up, so line numbers above stay valid
  for (const r of [...results].sort((a, b) => b.table.headerLine - a.table.headerLine)) {
    const { table } = r;
    const header = splitRow(lines[table.headerLine]!).map((h) => h.toLowerCase());
    const vCol = header.findIndex((h) => h.startsWith('verdict'));
    for (let row = 1; table.headerLine + 1 + row <= table.lastLine; row++) {
      const at = table.headerLine + 1 + row;
      const raw = lines[at]!.replace(HOLM_MARK, '');
      const lost = r.lost.filter((c) => c.row === row);
      const kept = r.survive.filter((c) => c.row === row);
      const several = r.table.comparisons.filter((c) => c.row === row).length > lost.length; // name them when not all
      const labels = (cs: Comparison[]) => cs.map((c) => c.label || String(c.row)).join(', ');
      let mark = '';
      if (lost.length) {
        mark = ` (not after Holm${several ? `: ${labels(lost)}` : ''}${kept.length ? `; ${labels(kept)} survive` : ''})`;
      }
      lines[at] = mark ? insertInCell(raw, vCol, mark) : raw;
    }
    // the line under the table: replace an earlier one, else insert after a blank line
    const after = table.lastLine + 1;
    if (lines[after] === '' && LINE_RE.test(lines[after + 1] ?? '')) lines[after + 1] = holmLine(r);
    else lines.splice(after, 0, '', holmLine(r));
  }
  return lines.join('\n');
}

/**
 * `text` with each claims table's Holm line and marks (what --write puts there): the report generators
 * (marsReport.ts, martiStudy.ts) pass what they write through it, so a regenerated report keeps them.
 */
export function holmMarked(file: string, text: string): string {
  const results = parseTables(file, text).map((t) => correct(t));
  return results.length ? writeMarks(text, results) : text;
}

function main(argv: string[]) {
  const json = argv.includes('--json');
  const write = argv.includes('--write');
  const dir = path.join(path.dirname(new URL(import.meta.url).pathname), '../../docs/results');
  const named = argv.filter((a) => !a.startsWith('--'));
  const files = named.length
    ? named
    : fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.md'))
        .sort()
        .map((f) => path.join(dir, f));
  const all: TableResult[] = [];
  for (const file of files) {
    const text = fs.readFileSync(file, 'utf8');
    const results = parseTables(path.relative(process.cwd(), file), text).map((t) => correct(t));
    all.push(...results);
    if (write && results.length) fs.writeFileSync(file, holmMarked(path.relative(process.cwd(), file), text));
  }
  if (json) {
    const out = all.map((r) => ({
      file: r.table.file,
      heading: r.table.heading,
      comparisons: r.m,
      reject: r.rejected.length,
      surviveHolm: r.survive.length,
      lost: r.lost.map((c) => ({ row: c.row, label: c.label, claim: c.claim, p: c.p })),
      survive: r.survive.map((c) => ({ row: c.row, label: c.label, claim: c.claim, p: c.p })),
      summarised: r.table.summarised,
    }));
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return;
  }
  for (const r of all) {
    console.log(`\n${r.table.file} — "${r.table.heading}" (line ${r.table.headerLine + 1})`);
    console.log(`  ${r.m} comparisons; ${r.rejected.length} reject at ${ALPHA}; ${r.survive.length} survive Holm`);
    for (const c of r.rejected) {
      console.log(
        `  ${r.survive.includes(c) ? 'survives' : 'LOST    '} row ${name(c)} ${c.verdict}, p ${fmtP(c.p)}, Holm-adjusted ${fmtP(r.adjusted.get(c)!)}: ${c.claim.slice(0, 90)}`,
      );
    }
    for (const c of r.table.mismatched) {
      console.log(`  MISMATCH row ${name(c)}: stated ${c.verdict}, its p-values give ${verdictOf(c.tests)}`);
    }
    for (const s of r.table.summarised) console.log(`  not counted: row ${s.row} (${s.why}): ${s.claim.slice(0, 90)}`);
  }
}

const invokedDirectly = typeof process !== 'undefined' && /claimsHolm\.ts$/.test(process.argv[1] ?? '');
if (invokedDirectly) main(process.argv.slice(2));
