/**
 * A tiny wheel for the fetch tests: a zip made with fflate holding one member (plus a decoy), and the catalogue
 * entry that pins it, so the cache, digest and unpacking logic run end to end with no network and no pip.
 */
import { createHash } from 'node:crypto';
import { strToU8, zipSync } from 'fflate';
import { artefactSchema, type Artefact } from '../../../engine/fetch/catalogue';

export const MEMBER = 'tiny_pkg/data/weights.bin';

export const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** A member that deflates (repeated text) and is large enough to arrive in several chunks. */
export function memberBytes(n = 300_000): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 7 + (i >> 10)) % 251;
  return out;
}

export function tinyWheel(member: Uint8Array = memberBytes()): Uint8Array {
  return zipSync({
    'tiny_pkg/__init__.py': strToU8('# decoy\n'),
    [MEMBER]: [member, { level: 6 }],
    'tiny_pkg-1.0.dist-info/WHEEL': strToU8('Wheel-Version: 1.0\n'),
  });
}

/** The catalogue entry for `wheel` whose member is `member`; `over` replaces fields (wrong digests, sizes). */
export function tinyArtefact(
  wheel: Uint8Array,
  member: Uint8Array,
  over: { wheelSha?: string; memberSha?: string; memberBytes?: number; memberPath?: string } = {},
): Artefact {
  return artefactSchema.parse({
    name: 'tiny-model',
    kind: 'model',
    description: 'a test artefact',
    wheel: { project: 'tiny-pkg', version: '1.0', sha256: over.wheelSha ?? sha256(wheel) },
    member: {
      path: over.memberPath ?? MEMBER,
      bytes: over.memberBytes ?? member.length,
      sha256: over.memberSha ?? sha256(member),
    },
  });
}
