/**
 * IPC handlers answer only frames showing the app's own page. Every `ipcMain.handle` goes through `trustedHandler`,
 * so a page that got into the window some other way (a bug in a guard, a subframe) cannot drive the host.
 */
import { isAppUrl, type AppLocation } from './appLocation';

/** The part of Electron's IpcMainInvokeEvent the check reads. */
export interface IpcSender {
  readonly senderFrame: { readonly url: string } | null;
}

export class UntrustedSenderError extends Error {
  constructor(
    readonly channel: string,
    readonly senderUrl: string | null,
  ) {
    super(
      `IPC '${channel}' refused: the sender ${senderUrl === null ? 'frame is gone' : `'${senderUrl}' is not the app`}`,
    );
    this.name = 'UntrustedSenderError';
  }
}

/** The sender frame's URL, or null when the frame has navigated away or been destroyed. */
function senderUrl(event: IpcSender): string | null {
  try {
    return event.senderFrame?.url ?? null;
  } catch {
    // Electron throws from senderFrame when the frame was disposed before the handler ran.
    return null;
  }
}

export function isTrustedSender(event: IpcSender, app: AppLocation): boolean {
  const url = senderUrl(event);
  return url !== null && isAppUrl(url, app);
}

/** Wraps a handler so it runs only for trusted senders; others get an UntrustedSenderError (a rejected invoke). */
export function trustedHandler<Args extends unknown[], Result>(
  app: AppLocation,
  channel: string,
  handler: (...args: Args) => Result,
): (event: IpcSender, ...args: Args) => Result {
  return (event, ...args) => {
    if (!isTrustedSender(event, app)) throw new UntrustedSenderError(channel, senderUrl(event));
    return handler(...args);
  };
}
