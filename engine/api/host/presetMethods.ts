/**
 * The host's methods for presets and configs: the presets a launch may start from, the run config's JSON Schema the
 * launch form is drawn from, and a launch's config validated (launchResolve.ts) before anything starts.
 */
import { runConfigJsonSchema } from '../../runs/config/configJsonSchema';
import { listPresets } from '../../runs/presets/presets';
import type { ApiHandlers } from './host';
import type { HostContext } from './hostContext';

export function createPresetMethods(
  ctx: HostContext,
): Pick<ApiHandlers, 'listPresets' | 'configSchema' | 'validateConfig'> {
  return {
    async listPresets() {
      return {
        presets: listPresets(ctx.presetsDir).map((p) => ({
          name: p.name,
          description: p.description,
          algorithm: presetAlgorithm(p.config),
          expectedRuntime: p.expectedRuntime,
          config: p.config,
          ...(p.recommended ? { recommended: true } : {}),
          ...(p.gpuOnly ? { gpuOnly: true } : {}),
        })),
      };
    },

    async configSchema() {
      return { schema: runConfigJsonSchema() };
    },

    async validateConfig(req) {
      const checked = ctx.resolveLaunch(req);
      return checked.success ? { ok: true, config: checked.data } : { ok: false, issues: checked.issues };
    },
  };
}

/** A preset's algorithm name ('' when its config names none: the listing still shows the preset). */
function presetAlgorithm(config: unknown): string {
  const a = (config as { algorithm?: unknown }).algorithm;
  return typeof a === 'string' ? a : '';
}
