/**
 * The host's methods for presets and configs: the presets a launch may start from, the run config's JSON Schema the
 * launch form is drawn from, and a launch's config validated (launchResolve.ts) before anything starts; for a
 * real model (chatgrpo, martipy) with its memory plan read from the model's header.
 */
import { chatgrpoMemoryPlan } from '../../chatgrpo/trainer';
import { martipyMemoryPlan } from '../../marti/python/trainEval';
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
      if (!checked.success) return { ok: false, issues: checked.issues };
      const config = checked.data;
      if (config.algorithm !== 'chatgrpo' && config.algorithm !== 'martipy') return { ok: true, config };
      // A real model: its memory plan from the header (the run's own start refuses the same way).
      let plan;
      try {
        plan = config.algorithm === 'chatgrpo' ? await chatgrpoMemoryPlan(config) : await martipyMemoryPlan(config);
      } catch (err) {
        return {
          ok: false,
          issues: [{ path: 'model.path', message: err instanceof Error ? err.message : String(err) }],
        };
      }
      const memory = plan ? { need: plan.need, limit: plan.limit.bytes, what: plan.limit.what } : undefined;
      const rowsField = config.algorithm === 'chatgrpo' ? 'task.groupSize' : 'search.problemsPerStep';
      if (plan?.problem) return { ok: false, issues: [{ path: rowsField, message: plan.problem }], memory };
      return { ok: true, config: checked.data, ...(memory ? { memory } : {}) };
    },
  };
}

/** A preset's algorithm name ('' when its config names none: the listing still shows the preset). */
function presetAlgorithm(config: unknown): string {
  const a = (config as { algorithm?: unknown }).algorithm;
  return typeof a === 'string' ? a : '';
}
