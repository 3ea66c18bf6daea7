// A JSON import (not a path resolved at run time) so that bundles of the engine (Electron main) carry the version.
import pkg from '../../package.json' with { type: 'json' };

export const ENGINE_VERSION: string = pkg.version;
