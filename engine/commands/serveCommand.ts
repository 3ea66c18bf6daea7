/**
 * `serve`: web mode — the app's windows in a browser, over a local HTTP server and WebSocket (engine/api/web/webServer).
 * Loopback only unless `--allow-remote`: the HTTP is cleartext, so beyond loopback the token can be read on the
 * network; an SSH tunnel reaches a loopback-bound server from another machine instead. The warning for a bind beyond
 * loopback goes to stderr always (also with --json, whose stdout stays one JSON line).
 */
import { Command } from 'commander';
import { createHost } from '../api/host/host';
import { nodeRunLauncher } from '../api/workers/runLauncher';
import { DEFAULT_PORT, resolveBindHost, sshTunnelAdvice, startWebServer } from '../api/web/webServer';
import { resolveHome } from '../runs/folder/home';
import { homeOption, portNumber } from './options';
import { untilStopSignal } from './stopSignal';

export { DEFAULT_PORT };

interface ServeOptions {
  port: number;
  host: string;
  allowRemote?: boolean;
  json?: boolean;
  home?: string;
}

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description(
      'web mode: serve the app to a browser on this machine (needs `npm run build` first); prints the URL with its token',
    )
    .option('--port <n>', `port to listen on (0: any free port)`, portNumber, DEFAULT_PORT)
    .option(
      '--host <address>',
      'interface to bind (default loopback); anything else also needs --allow-remote',
      '127.0.0.1',
    )
    .option(
      '--allow-remote',
      `bind --host beyond loopback: cleartext HTTP, the token readable on the network (prefer \`${sshTunnelAdvice()}\`)`,
    )
    .option('--json', 'print {"url": …} as one JSON line instead of a sentence')
    .addOption(homeOption())
    .action(async (opts: ServeOptions) => {
      const home = resolveHome({ home: opts.home });
      // Checked before anything starts: a refused --host costs nothing.
      const bind = await resolveBindHost(opts.host, opts.allowRemote ?? false, opts.port);
      if (!bind.loopback) {
        console.error(
          `mars-lab: warning: binding ${opts.host}, so other machines can reach port ${opts.port || '(any free)'} over cleartext HTTP and anyone who can read the network can read the token; prefer the default (127.0.0.1) with an SSH tunnel: \`${sshTunnelAdvice(opts.port)}\``,
        );
      }
      const host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
      let server;
      try {
        server = await startWebServer({
          host,
          port: opts.port,
          bindHost: opts.host,
          allowRemote: opts.allowRemote ?? false,
        });
      } catch (err) {
        await host.close();
        throw err;
      }
      if (opts.json) console.log(JSON.stringify({ url: server.url, port: server.port, home }));
      else {
        console.log(`mars-lab web mode: open ${server.url}`);
        console.log(
          `  runs: ${home}; the token in the URL is needed to reach the runs; Ctrl-C stops the server (not the runs)`,
        );
      }
      await untilStopSignal();
      await server.close();
      await host.close();
    });
}
