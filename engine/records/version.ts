/**
 * The `version` every record of a run folder carries (engine/records/: one zod schema per record). Version 1 is the
 * form the records had when the field was introduced, so a record written before then (no `version`) reads as 1; a
 * record whose form changes in a way an old reader would misread gets the next number, and its schema says how to read
 * each. Only zod here: the renderer imports these files' types (`import type`), the engine their schemas.
 */
import { z } from 'zod';

/** The version new records are written with. */
export const RECORD_VERSION = 1;

/** A record's `version`: 1, or absent in a file written before records had one (read as 1). */
export const versionField = () => z.literal(RECORD_VERSION).default(RECORD_VERSION);
