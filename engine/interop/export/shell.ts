/**
 * Shell text for the launch scripts: quoting (a literal in single quotes, a value with $VARIABLES in double quotes,
 * where only $ expansions are meant), and the preamble every script shares (strict mode, refusing to run without the
 * user's model or data).
 */
import type { ArgValue } from './plan';

/** `s` as one shell word that expands to exactly `s`. */
export function shQuote(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}

/** An argument `prefix` + value: literal text single-quoted; a shell expression double-quoted (its $VARS expand). */
export function shArg(prefix: string, value: ArgValue): string {
  if ('literal' in value) return shQuote(prefix + value.literal);
  // A shell expression is written by the exporter itself (only $NAME and ${NAME} references and plain text).
  return `"${prefix.replace(/["\\`$]/g, '\\$&')}${value.shell}"`;
}

/** One command over several lines, each argument on its own line. */
export function continued(words: readonly string[], indent = '  '): string {
  return words.map((w, i) => (i === 0 ? w : indent + w)).join(' \\\n');
}

/** A variable the user may set in the environment, else the export's default (none: left empty). */
export function envDefault(name: string, value: string | undefined): string {
  return value === undefined
    ? `${name}="\${${name}:-}"`
    : `if [ -z "\${${name}:-}" ]; then ${name}=${shQuote(value)}; fi`;
}
