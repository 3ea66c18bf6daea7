/**
 * Text from run folders (names, tags, metric names, configs) printed for people: a folder anyone can copy in must not
 * drive the terminal. Control characters (C0, DEL, C1: the escape sequences that set the window title, write the
 * clipboard or move the cursor), line and paragraph separators and bidirectional overrides are shown as `\xNN` /
 * `\u{NNNN}` escapes, so a table cell stays one line and reads the same as the bytes on disk. --json output is left
 * alone: JSON.stringify escapes what JSON must, and scripts want the data as it is.
 */

// C0 controls and DEL, C1 controls, U+2028/2029, and the bidi marks, embeddings, overrides and isolates.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

function escapeChar(c: string): string {
  const code = c.codePointAt(0)!;
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
}

/** One line of terminal-safe text: every unsafe character (newlines and tabs too) shown as an escape. */
export function terminalText(value: unknown): string {
  return String(value).replace(UNSAFE, escapeChar);
}

/** Whether a string would change when shown (for tests and callers that want to say so). */
export function hasUnsafeText(value: string): boolean {
  UNSAFE.lastIndex = 0;
  const found = UNSAFE.test(value);
  UNSAFE.lastIndex = 0;
  return found;
}
