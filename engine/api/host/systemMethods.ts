/**
 * The host's method about itself (ping): its engine version, home and transport, which proves the bridge and the host
 * are alive.
 */
import { ENGINE_VERSION } from '../../base/version';
import type { ApiHandlers } from './host';
import type { HostContext } from './hostContext';

export function createSystemMethods(ctx: HostContext): Pick<ApiHandlers, 'ping'> {
  return {
    async ping() {
      return { engineVersion: ENGINE_VERSION, home: ctx.home, transport: ctx.transport };
    },
  };
}
