/**
 * The project's root folder (where package.json, resources/, native/ and out/ are), from this module's place: two
 * folders below the root in the sources (engine/base/) and in the engine's bundle (out/cli/index.js), so the same
 * `../../` holds in both (engine.vite.config.ts). Every module that finds a shipped file goes through this one, so a
 * module can move to any depth without its paths breaking in one of the two places.
 */
import { fileURLToPath } from 'node:url';

/** The root, without a trailing slash. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');
