/**
 * Python's syntax highlighting for the windows (issue 31 item 7, issue 33 item 5): highlight.js's Python grammar through
 * lowlight, which returns the tokens as a tree of plain objects rather than HTML, so the page draws them as text in
 * spans (no innerHTML of model-written code). The tree is flattened into lines of segments, each with the
 * highlight.js classes that apply to it (`hljs-keyword`, `hljs-string`, …; components/code/PythonCode.svelte colours
 * them from the palette), so a line can be drawn alone (a diff's lines) as well as a whole program.
 */
import type { ElementContent, Root } from 'hast';
import { createLowlight } from 'lowlight';
import python from 'highlight.js/lib/languages/python';

export interface CodeSegment {
  text: string;
  /** highlight.js's classes for this text, outermost first ('' for plain text). */
  cls: string;
}

export type CodeLine = CodeSegment[];

let lowlight: ReturnType<typeof createLowlight> | null = null;

/** Programs longer than this are drawn plain: the grammar's cost grows with the text, and no program is this long. */
export const MAX_HIGHLIGHT_CHARS = 200_000;

function classesOf(node: ElementContent): string[] {
  if (node.type !== 'element') return [];
  const c = node.properties['className'];
  return Array.isArray(c) ? c.map(String) : typeof c === 'string' ? [c] : [];
}

/** The lines of `code`, each a list of segments with their classes; a program's last newline makes no empty line. */
export function highlightPython(code: string): CodeLine[] {
  const lines: CodeLine[] = [[]];
  const push = (text: string, cls: string[]): void => {
    const parts = text.split('\n');
    parts.forEach((part, i) => {
      if (i > 0) lines.push([]);
      if (part !== '') lines.at(-1)!.push({ text: part, cls: cls.join(' ') });
    });
  };
  if (code.length > MAX_HIGHLIGHT_CHARS) {
    push(code, []);
  } else {
    lowlight ??= createLowlight({ python });
    const tree: Root = lowlight.highlight('python', code);
    const walk = (nodes: readonly ElementContent[], cls: string[]): void => {
      for (const n of nodes) {
        if (n.type === 'text') push(n.value, cls);
        else if (n.type === 'element') walk(n.children, [...cls, ...classesOf(n)]);
      }
    };
    walk(tree.children as ElementContent[], []);
  }
  if (lines.length > 1 && lines.at(-1)!.length === 0 && code.endsWith('\n')) lines.pop();
  return lines;
}
