/** `serve`: web mode — the app's windows in a browser, over a local HTTP server and WebSocket (engine/api/webServer). */
import { Command, InvalidArgumentError } from 'commander';
import { createHost } from '../api/host';
import { nodeRunLauncher } from '../api/runLauncher';
import { isLoopbackHost, startWebServer } from '../api/webServer';
import { resolveHome } from '../runs/home';
import { homeOption } from './options';

function port(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) > 65535) throw new InvalidArgumentError('expected a port number (0 picks a free one)');
  return Number(v);
}

export const DEFAULT_PORT = 4780;

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('web mode: serve the app to a browser on this machine (needs `npm run build` first); prints the URL with its token')
    .option('--port <n>', `port to listen on (0: any free port)`, port, DEFAULT_PORT)
    .option('--host <address>', 'interface to bind; anything but loopback exposes the app (token-protected) to the network', '127.0.0.1')
    .option('--json', 'print {"url": …} as one JSON line instead of a sentence')
    .addOption(homeOption())
    .action(async (opts: { port: number; host: string; json?: boolean; home?: string }) => {
      const home = resolveHome({ home: opts.home });
      const host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
      let server;
      try {
        server = await startWebServer({ host, port: opts.port, bindHost: opts.host });
      } catch (err) {
        await host.close();
        throw err;
      }
      if (opts.json) console.log(JSON.stringify({ url: server.url, port: server.port, home }));
      else {
        console.log(`mars-lab web mode: open ${server.url}`);
        console.log(`  runs: ${home}; the token in the URL is needed for every request; Ctrl-C stops the server (not the runs)`);
        if (!isLoopbackHost(opts.host)) console.log(`  warning: bound to ${opts.host}, so other machines can reach this port; they still need the token`);
      }
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          resolve();
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
      await server.close();
      await host.close();
    });
}
