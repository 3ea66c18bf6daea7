/**
 * How the backend ladder (backend.ts) asks about optional packages: whether a failed import means the package is
 * absent, which version is installed, and an error's first line for the report.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export function isNotInstalled(err: unknown, pkg: string): boolean {
  const e = err as { code?: string; message?: string };
  return (
    (e?.code === 'ERR_MODULE_NOT_FOUND' || e?.code === 'MODULE_NOT_FOUND') &&
    typeof e.message === 'string' &&
    e.message.includes(pkg)
  );
}

export function message(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  return m.split('\n')[0]!.slice(0, 400);
}

export function packageVersion(pkg: string): string | null {
  try {
    return (require(`${pkg}/package.json`) as { version: string }).version;
  } catch {
    return null;
  }
}
