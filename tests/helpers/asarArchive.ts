/**
 * A minimal asar archive for tests of the packaging step: the header as @electron/asar writes it (a pickle holding
 * the header's size, then a pickle holding the header JSON), followed by the files' bytes.
 */
import { writeFileSync } from 'node:fs';

type Tree = { files: Record<string, Tree | { size: number; offset: string }> };

/** Writes an asar archive at `file` holding `files` (path → text). */
export function writeAsar(file: string, files: Record<string, string>): void {
  const root: Tree = { files: {} };
  const bodies: Buffer[] = [];
  let offset = 0;
  for (const [path, text] of Object.entries(files)) {
    const parts = path.split('/');
    let dir = root;
    for (const part of parts.slice(0, -1)) dir = (dir.files[part] ??= { files: {} }) as Tree;
    const body = Buffer.from(text);
    dir.files[parts.at(-1)!] = { size: body.length, offset: String(offset) };
    bodies.push(body);
    offset += body.length;
  }
  const json = Buffer.from(JSON.stringify(root));
  const padded = Math.ceil(json.length / 4) * 4;
  const head = Buffer.alloc(16);
  head.writeUInt32LE(4, 0); // the first pickle's payload: one uint32
  head.writeUInt32LE(8 + padded, 4); // the header pickle's size
  head.writeUInt32LE(4 + padded, 8); // its payload: the string's length, then the string padded to 4 bytes
  head.writeUInt32LE(json.length, 12);
  writeFileSync(file, Buffer.concat([head, json, Buffer.alloc(padded - json.length), ...bodies]));
}
