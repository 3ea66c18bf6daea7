/**
 * Diversity of Python programs (issue 31, item 4: "diversity metrics work on code"), for MARTI's measures
 * (engine/marti/diversity.ts: pairwise token edit distance, distinct-program ratio) on the nodes of Python trees.
 *
 * Chosen: **token edit distance over Python's tokens with comments and docstrings dropped**, and for "distinct
 * programs" a canonical form with local names renamed in order of first use (alpha-renaming). Why not a normalised
 * AST: it would need Python to parse each program (a sandboxed run per node, or a parser written here), and would
 * also fold formatting and name choices, which a token form already ignores (whitespace, comments) or folds on
 * purpose (names, in the canonical form). Token distance keeps what a reader sees as a different program (another
 * operator, call or constant), counts a renamed variable as the same program once canonical, and costs nothing to
 * compute. Programs that do not tokenize cleanly (an unclosed string) still get tokens: the rest is taken char by char.
 */
import type { DiversityOptions } from '../diversity';

const KEYWORDS = new Set(
  (
    'False None True and as assert async await break class continue def del elif else except finally for from global ' +
    'if import in is lambda nonlocal not or pass raise return try while with yield match case'
  ).split(' '),
);

/** Names a program does not choose: built-ins and common library names keep their text in the canonical form. */
const BUILTINS = new Set(
  (
    'abs all any bin bool chr dict divmod enumerate filter float format frozenset hex int isinstance len list map max ' +
    'min next ord pow print range repr reversed round set sorted str sum tuple type zip self math re itertools ' +
    'collections functools typing List Dict Tuple Optional Set Any Union Callable'
  ).split(' '),
);

const TOKEN =
  /(?:[rRbBuUfF]{0,2})(?:"""[\s\S]*?"""|'''[\s\S]*?'''|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')|#[^\n]*|[A-Za-z_][A-Za-z0-9_]*|0[xXoObB][0-9a-fA-F_]+|\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+|\*\*=?|\/\/=?|->|:=|[<>=!]=|<<=?|>>=?|[-+*/%&|^@]=|\S/g;

/** Python's tokens of a program, without comments and triple-quoted strings (docstrings). */
export function pythonTokens(program: string): string[] {
  return (program.match(TOKEN) ?? []).filter((t) => !t.startsWith('#') && !/^[rRbBuUfF]{0,2}("""|''')/.test(t));
}

/**
 * The canonical form: the tokens with every name the program chose renamed `_0`, `_1`, … in order of first use;
 * keywords, built-ins and attributes (a name after a dot: `.append`, `.values`) keep their text.
 */
export function pythonCanonical(program: string): string {
  const names = new Map<string, string>();
  return pythonTokens(program)
    .map((t, i, all) => {
      const attribute = all[i - 1] === '.';
      if (!/^[A-Za-z_]/.test(t) || KEYWORDS.has(t) || BUILTINS.has(t) || attribute || /^[rRbBuUfF]{1,2}["']/.test(t)) {
        return t;
      }
      let n = names.get(t);
      if (n === undefined) {
        n = `_${names.size}`;
        names.set(t, n);
      }
      return n;
    })
    .join(' ');
}

/** The options MARTI's diversity measures take for Python programs. */
export const PYTHON_DIVERSITY: DiversityOptions = { tokenize: pythonTokens, canonical: pythonCanonical };
