/**
 * What chat models wrap around the answer they were asked for, and how it is taken off: Markdown code fences
 * (```lang … ```), inline backticks, a label line ("Program:", "Here is the summary:"), a reasoning model's
 * <think>…</think> preamble in its own tags when the format has none. Each helper says whether it changed anything,
 * so the reading can name the repair (engine/policy/endpointPolicy.ts counts and reports them).
 */

/** The text inside the first fenced block (its first line's language name dropped), or the text unchanged. */
export function stripFences(text: string): { text: string; stripped: boolean } {
  const open = /```[^\n`]*\n?/.exec(text);
  if (!open) return { text, stripped: false };
  const start = open.index + open[0].length;
  const close = text.indexOf('```', start);
  return { text: text.slice(start, close < 0 ? text.length : close), stripped: true };
}

/** A line without a leading label ("Program:", "**Answer:**", "> ") and surrounding backticks or quotes. */
export function stripLabel(line: string): { text: string; stripped: boolean } {
  let t = line.trim();
  const before = t;
  t = t.replace(/^(?:>\s*|[-*]\s+|\d+[.)]\s+)/, '');
  t = t.replace(
    /^\**\s*(?:the\s+)?(?:final\s+)?(?:program|answer|solution|code|summary|output)\s*\**\s*[:：]\s*\**\s*/i,
    '',
  );
  if (/^`[^`]+`$/.test(t)) t = t.slice(1, -1).trim();
  return { text: t, stripped: t !== before };
}

/** A line that only introduces what follows ("Here is the program:", "Sure!"): prose, not an answer. */
export function isPreamble(line: string): boolean {
  const t = line.trim();
  return t === '' || /[:：]\s*$/.test(t) || /^(sure|okay|ok|certainly|of course|here('s| is| are))\b/i.test(t);
}

/** Whitespace runs (newlines included) as one space: the run's texts are single-line. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
