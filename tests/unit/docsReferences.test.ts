/**
 * Every reference to a document resolves inside the repository (issue 21, "The project's own documents").
 *
 * The code, the tests, README.md and docs/ cite documents: `docs/….md` paths, the names of the shared design notes
 * the project started from (now docs/algorithms.md, docs/architecture.md, docs/build-notes.md), relative links inside
 * markdown files, each optionally followed by sections (`§2.9`, `§2.5–2.7`, `§1, §4`, `§3.10 (b)`) or a quoted
 * section name (`architecture.md "Run folder"`). This test fails, with the list of offenders, for a reference to a file
 * that is not in the repository, or to a section the file lacks.
 *
 * A section exists when the file has a heading that starts with its number (`### 2.9 Edge cases`, `## 4. Defaults`)
 * or a list item that starts with it in bold (`- **7.16** Tree growth: …`); a quoted name exists when a heading
 * contains it. Chains of sections end at the next document name, at a closing parenthesis of the sentence, at the end
 * of a sentence, or after 240 characters; comment prefixes of continued lines (` * `, `//`, `#`) are read through.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SELF = path
  .relative(ROOT, fileURLToPath(import.meta.url))
  .split(path.sep)
  .join('/');

/** Where references are looked for (relative to the repository root). */
const SCAN = [
  'engine',
  'main',
  'preload',
  'renderer/src',
  'scripts',
  'native',
  'tests',
  'README.md',
  'CONTRIBUTING.md',
  'docs',
];
/** Build outputs, recorded data and screenshots: not prose anyone maintains. */
const SKIP_DIRS = new Set([
  'node_modules',
  'native/build',
  'tests/output',
  'tests/fixtures',
  'tests/scratch',
  'docs/results/marti.parts',
]);
const TEXT_EXT = /\.(ts|mts|cts|js|mjs|cjs|svelte|md|c|h|sh|py|json|css|html)$/;
const MAX_BYTES = 4 << 20;

/** The shared design notes' names, as the code cited them before the repository had its own documents. */
// Spelt so that the rewrite of these names in the tree (a sed over the old names) cannot change this file.
const OLD_NAMES = ['ALGORITHMS', 'DESIGN', ['BUILD', 'NOTES'].join('-'), 'SCALE-OUT', 'ECOSYSTEM'];

export interface DocReference {
  /** The file the reference is in, relative to the root. */
  file: string;
  line: number;
  /** The reference as written (the document and its sections). */
  text: string;
  /** The document it names, relative to the root. */
  target: string;
  sections: string[];
  /** A quoted section name right after the document (`"Run folder"`). */
  named: string | null;
}

export interface Offender {
  where: string;
  text: string;
  problem: string;
}

const NUM = String.raw`\d+(?:\.\d+)*`;
const DOC_TOKEN = new RegExp(
  [
    // a path under docs/ (optionally ../ or ./ first), as code and prose write it
    String.raw`(?<![\w/.-])(?:\.{1,2}/)*(docs/[\w./-]*?\.md)\b`,
    // the shared notes' names, bare or behind a path outside the repository (the build notes' also without `.md`)
    String.raw`(?<![\w.-])(?:[\w.-]*/)*((?:ALGORITHMS|DESIGN|SCALE-OUT|ECOSYSTEM)\.md|BUILD[-]NOTES(?:\.md)?)(?![\w-])`,
    // a relative markdown link: [text](some/file.md#anchor)
    String.raw`\]\((?!https?:|/)([^)\s#]+\.md)(?:#[^)\s]*)?\)`,
  ].join('|'),
  'g',
);

/**
 * Same-length text in which a line break and the comment prefix of the next line read as spaces, so a reference that
 * wraps in a comment is found whole and every index still maps to its line.
 */
function joinLines(text: string): string {
  return text.replace(/\r?\n[ \t]*(?:\*(?!\/)|\/\/|#+(?=\s)|<!--)?/g, (m) => ' '.repeat(m.length));
}

/** Section numbers written after a document name, up to where the citation ends. */
function sectionsAfter(text: string, from: number): { sections: string[]; named: string | null; end: number } {
  const limit = Math.min(text.length, from + 240);
  const rest = text.slice(from, limit);
  const named = /^[,:]?\s*["“]([^"”\n]{1,40})["”]/.exec(rest);
  const sections: string[] = [];
  let depth = 0;
  let end = 0;
  const tokens = new RegExp(
    String.raw`§\s*(${NUM})(?:\s*[–—-]\s*§?\s*(${NUM}))?|(?<![\w-])(?:docs/|${OLD_NAMES.join('|')})|[()]|[.;!?](?=\s|$)|\n`,
    'g',
  );
  for (let m = tokens.exec(rest); m; m = tokens.exec(rest)) {
    const t = m[0];
    if (t === '(') depth++;
    else if (t === ')') {
      if (--depth < 0) break;
    } else if (t.startsWith('§')) {
      sections.push(m[1]!);
      if (m[2]) sections.push(m[2]);
      end = m.index + t.length;
    } else break; // another document, the end of a sentence or a line
  }
  return { sections, named: named ? named[1]!.trim() : null, end: Math.max(end, named ? named[0].length : 0) };
}

/** The document references in one file's text. `file` is relative to the root; relative links resolve from it. */
export function findReferences(file: string, text: string): DocReference[] {
  const joined = joinLines(text);
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') lineStarts.push(i + 1);
  const lineOf = (index: number) => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid]! <= index) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  const out: DocReference[] = [];
  DOC_TOKEN.lastIndex = 0;
  for (let m = DOC_TOKEN.exec(joined); m; m = DOC_TOKEN.exec(joined)) {
    let target: string;
    if (m[1]) target = m[1];
    else if (m[2]) target = m[2].endsWith('.md') ? m[2] : `${m[2]}.md`;
    else target = path.posix.normalize(path.posix.join(path.posix.dirname(file), m[3]!));
    const after = sectionsAfter(joined, m.index + m[0].length);
    const text = (m[0] + joined.slice(m.index + m[0].length, m.index + m[0].length + after.end))
      .replace(/\s+/g, ' ')
      .trim();
    out.push({ file, line: lineOf(m.index), text, target, sections: after.sections, named: after.named });
  }
  return out;
}

/** The sections a markdown text defines: numbered headings and bold-numbered list items; and its heading texts. */
export function sectionsOf(markdown: string): { numbers: Set<string>; headings: string[] } {
  const numbers = new Set<string>();
  const headings: string[] = [];
  for (const line of markdown.split(/\r?\n/)) {
    const h = /^#{1,6}\s+(.*)$/.exec(line);
    if (h) {
      headings.push(h[1]!.trim());
      const n = new RegExp(String.raw`^(?:§\s*)?(${NUM})[.)]?(?:\s|$)`).exec(h[1]!.trim());
      if (n) numbers.add(n[1]!);
      continue;
    }
    const item = new RegExp(String.raw`^\s*(?:[-*]|\d+\.)\s+\*\*(?:§\s*)?(${NUM})\*\*`).exec(line);
    if (item) numbers.add(item[1]!);
  }
  return { numbers, headings };
}

/** The offenders among references, given a reader of the repository's files (null: no such file). */
export function checkReferences(refs: readonly DocReference[], read: (target: string) => string | null): Offender[] {
  const cache = new Map<string, ReturnType<typeof sectionsOf> | null>();
  const doc = (target: string) => {
    if (!cache.has(target)) {
      const text = read(target);
      cache.set(target, text === null ? null : sectionsOf(text));
    }
    return cache.get(target)!;
  };
  const out: Offender[] = [];
  for (const r of refs) {
    const where = `${r.file}:${r.line}`;
    const d = doc(r.target);
    if (!d) {
      out.push({ where, text: r.text, problem: `${r.target} is not in the repository` });
      continue;
    }
    const missing = r.sections.filter((s) => !d.numbers.has(s));
    if (missing.length) {
      out.push({ where, text: r.text, problem: `${r.target} has no ${missing.map((s) => `§${s}`).join(', ')}` });
    }
    if (r.named && !d.headings.some((h) => h.toLowerCase().includes(r.named!.toLowerCase()))) {
      out.push({ where, text: r.text, problem: `${r.target} has no heading "${r.named}"` });
    }
  }
  return out;
}

function filesUnder(rel: string): string[] {
  const abs = path.join(ROOT, rel);
  if (!fs.existsSync(abs)) return [];
  const st = fs.statSync(abs);
  if (st.isFile()) return [rel];
  const out: string[] = [];
  for (const e of fs.readdirSync(abs, { withFileTypes: true })) {
    const child = `${rel}/${e.name}`;
    if (e.name.startsWith('.') || SKIP_DIRS.has(child) || SKIP_DIRS.has(e.name)) continue;
    if (e.isDirectory()) out.push(...filesUnder(child));
    else if (e.isFile() && TEXT_EXT.test(e.name)) out.push(child);
  }
  return out;
}

function readRepoFile(target: string): string | null {
  const abs = path.resolve(ROOT, target);
  if (!abs.startsWith(ROOT + path.sep)) return null;
  try {
    return fs.statSync(abs).isFile() ? fs.readFileSync(abs, 'utf8') : null;
  } catch {
    return null;
  }
}

describe('document references (issue 21)', () => {
  // Names of the shared notes are built, not written, so this file never cites them itself.
  const ALGO = `${OLD_NAMES[0]}.md`;
  const BUILD = OLD_NAMES[2]!;

  it('reads the forms the code writes', () => {
    const src = [
      `/** One pool (${ALGO} §2.5–2.7, §7.6): see docs/algorithms/tplus.md. */`,
      `// ${BUILD} §8 pins the peer; docs/architecture.md "Run folder" holds the rest (/work/shared/docs/${ALGO} §1).`,
      ` * Selection (docs/algorithms.md §3.4, §3.6 backpropagation, §3.10 (b) depth`,
      ` * weighting), then §9.9 of something else.`,
      `See [T+](algorithms/tplus.md#the-rule) and docs/algorithms.md §1 and §4.`,
    ].join('\n');
    const refs = findReferences('docs/x.md', src);
    expect(refs.map((r) => [r.line, r.target, r.sections, r.named])).toEqual([
      [1, ALGO, ['2.5', '2.7', '7.6'], null],
      [1, 'docs/algorithms/tplus.md', [], null],
      [2, `${BUILD}.md`, ['8'], null],
      [2, 'docs/architecture.md', [], 'Run folder'],
      [2, ALGO, ['1'], null],
      [3, 'docs/algorithms.md', ['3.4', '3.6', '3.10'], null],
      [5, 'docs/algorithms/tplus.md', [], null],
      [5, 'docs/algorithms.md', ['1', '4'], null],
    ]);
  });

  it('reports a missing file, a missing section and a missing named section, and accepts what exists', () => {
    const files: Record<string, string> = {
      'docs/a.md': '# A\n\n## 1. One\n\n### 1.2 Two\n\n- **7.3** A property\n\n## Run folder\n',
    };
    const read = (t: string) => files[t] ?? null;
    const refs = findReferences(
      'engine/x.ts',
      [
        '// docs/a.md §1, §1.2 and §7.3; docs/a.md "Run folder"',
        `// docs/a.md §1.3; docs/a.md "Processes"; docs/b.md; ${ALGO} §1.2`,
      ].join('\n'),
    );
    expect(checkReferences(refs, read).map((o) => `${o.where} ${o.problem}`)).toEqual([
      'engine/x.ts:2 docs/a.md has no §1.3',
      'engine/x.ts:2 docs/a.md has no heading "Processes"',
      'engine/x.ts:2 docs/b.md is not in the repository',
      `engine/x.ts:2 ${ALGO} is not in the repository`,
    ]);
  });

  it('every reference in the code, tests, README.md, CONTRIBUTING.md and docs/ names a file and sections that exist', () => {
    const files = SCAN.flatMap(filesUnder).filter((f) => f !== SELF);
    expect(files.length).toBeGreaterThan(100);
    const refs = files.flatMap((f) => {
      const abs = path.join(ROOT, f);
      if (fs.statSync(abs).size > MAX_BYTES) return [];
      return findReferences(f, fs.readFileSync(abs, 'utf8'));
    });
    expect(refs.length).toBeGreaterThan(0);
    const offenders = checkReferences(refs, readRepoFile).map((o) => `${o.where}: ${o.text} — ${o.problem}`);
    expect(offenders, `${offenders.length} references do not resolve:\n${offenders.join('\n')}`).toEqual([]);
  });
});
