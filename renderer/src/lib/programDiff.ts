/**
 * A refinement against its parent's program (issue 31 item 7): jsdiff's line diff (`diff`), as rows the tree view draws
 * with + and − marks; Windows line ends count as Unix ones.
 */
import { diffLines } from 'diff';

export interface DiffRow {
  kind: 'add' | 'del' | 'same';
  text: string;
}

export function programDiff(parent: string, child: string): { rows: DiffRow[]; added: number; removed: number } {
  const rows: DiffRow[] = [];
  for (const part of diffLines(parent, child, { stripTrailingCr: true })) {
    const kind = part.added ? 'add' : part.removed ? 'del' : 'same';
    const lines = part.value.replace(/\n$/, '').split('\n');
    for (const text of lines) rows.push({ kind, text });
  }
  return {
    rows,
    added: rows.filter((r) => r.kind === 'add').length,
    removed: rows.filter((r) => r.kind === 'del').length,
  };
}
