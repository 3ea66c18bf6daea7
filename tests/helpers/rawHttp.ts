/** Raw HTTP over a loopback socket, for tests that send what a browser never would (web mode's hardening tests). */
import net from 'node:net';

export type Ending = 'whole' | 'cut' | 'reset';

/**
 * Sends `text` on a new connection to 127.0.0.1:`port` and resolves with what came back: once a whole response head
 * arrived, the server closed, or `timeoutMs` passed (a cut-off request is left waiting). 'reset' sends a TCP reset
 * right after writing.
 */
export function rawExchange(
  port: number,
  text: string,
  opts: { ending?: Ending; timeoutMs?: number } = {},
): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let got = '';
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(got);
    };
    const timer = setTimeout(done, opts.timeoutMs ?? 3000);
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      got += chunk;
      if (got.includes('\r\n\r\n')) done();
    });
    socket.on('close', done);
    socket.on('error', done);
    socket.on('connect', () => {
      socket.write(text, 'latin1');
      if (opts.ending === 'reset') {
        socket.resetAndDestroy();
        done();
      }
    });
  });
}

/** The status code of a raw response, 0 when none came. */
export const statusOf = (response: string): number => Number(/^HTTP\/1\.[01] (\d{3})/.exec(response)?.[1] ?? 0);
