/**
 * The run config as JSON Schema (draft 2020-12), from which the desktop app draws its launch form: titles and
 * descriptions label the fields, `default`s prefill them, and `oneOf` on `algorithm` picks the sections shown.
 */
import { z } from 'zod';
import { runConfigSchema } from './configSchema';

export type JsonSchema = z.core.JSONSchema.BaseSchema;

let cached: JsonSchema | undefined;

export function runConfigJsonSchema(): JsonSchema {
  // 'input' describes what a user may write: fields with defaults are optional and carry their default.
  cached ??= {
    ...z.toJSONSchema(runConfigSchema, { target: 'draft-2020-12', io: 'input' }),
    // Not a 2020-12 keyword (OpenAPI's), which validators ignore; form libraries use it to switch on `algorithm`.
    discriminator: { propertyName: 'algorithm' },
  };
  // A copy, so a caller that edits its schema (a form adding UI hints) cannot change the next caller's.
  return structuredClone(cached);
}
