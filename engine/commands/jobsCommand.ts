/**
 * `mars-lab jobs ls|logs|stop --ray URL`: single Ray jobs (a study's runs or anyone's) through the Ray Jobs API, and
 * the Ray connection flags the `study` command shares (--ray, --ray-token, --ray-header, --ray-ca).
 */
import { Command, Option } from 'commander';
import { RayJobsClient, RAY_TOKEN_ENV } from '../cluster/ray/jobsClient';
import { jobGpus, jobModel, TERMINAL_STATUSES } from '../cluster/ray/jobsSchemas';
import { followJobLogs } from '../cluster/ray/logTail';
import { UserError } from '../base/userError';
import { terminalText as tt } from './terminalText';

export interface RayFlags {
  ray?: string;
  rayToken?: string;
  rayHeader: string[];
  rayCa?: string;
}

/** The connection flags, added to a command (--ray itself is added by the caller: required here, optional there). */
export function addRayConnectionOptions(cmd: Command): Command {
  return cmd
    .addOption(
      new Option('--ray-token <token>', `bearer token of a Ray cluster in token mode (default: $${RAY_TOKEN_ENV})`),
    )
    .addOption(
      new Option('--ray-header <name:value>', 'an extra request header, e.g. for an authenticating proxy (repeatable)')
        .argParser((v: string, prev: string[] = []) => [...prev, v])
        .default([]),
    )
    .addOption(
      new Option('--ray-ca <file>', "a PEM file with the CA of an https dashboard's (or proxy's) certificate"),
    );
}

export function rayClient(flags: RayFlags): RayJobsClient {
  if (!flags.ray) {
    throw new UserError('--ray URL is required: the Ray dashboard address, e.g. --ray http://127.0.0.1:8265');
  }
  const headers: Record<string, string> = {};
  for (const h of flags.rayHeader) {
    const i = h.indexOf(':');
    if (i < 1) throw new UserError(`--ray-header ${h}: give it as name:value, e.g. --ray-header 'X-Proxy-Key: abc'`);
    headers[h.slice(0, i).trim().toLowerCase()] = h.slice(i + 1).trim();
  }
  return new RayJobsClient({ url: flags.ray, token: flags.rayToken, headers, caFile: flags.rayCa });
}

function when(ms: number | null | undefined): string {
  return ms ? new Date(ms).toISOString().slice(0, 19).replace('T', ' ') : '–';
}

export function registerJobsCommand(program: Command): void {
  const jobs = program.command('jobs').description('single Ray jobs on a cluster: list, follow the log, stop');

  addRayConnectionOptions(
    jobs
      .command('ls')
      .description("the cluster's jobs, newest first, with status (a study's runs show their study)")
      .requiredOption('--ray <url>', 'the Ray dashboard address, e.g. http://127.0.0.1:8265')
      .option('--json', 'print JSON'),
  ).action(async (opts: RayFlags & { json?: boolean }) => {
    const client = rayClient(opts);
    const list = (await client.list())
      .filter((j) => j.submission_id)
      .sort((a, b) => (b.start_time ?? 0) - (a.start_time ?? 0));
    if (opts.json) return console.log(JSON.stringify(list, null, 2));
    if (list.length === 0) return console.log(`no jobs on the Ray cluster at ${client.where}`);
    const head = ['job', 'status', 'started', 'study', 'gpus', 'model', 'entrypoint'];
    const rows = list.map((j) => [
      tt(j.submission_id ?? ''),
      j.status,
      when(j.start_time),
      tt(j.metadata?.mars_lab_study ?? '–'),
      jobGpus(j) ? String(jobGpus(j)) : '–',
      tt(jobModel(j) ?? '–'),
      tt((j.entrypoint ?? '').slice(0, 60)),
    ]);
    const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    for (const r of [head, ...rows]) {
      console.log(
        r
          .map((c, i) => c.padEnd(w[i]!))
          .join('  ')
          .trimEnd(),
      );
    }
  });

  addRayConnectionOptions(
    jobs
      .command('logs')
      .description("a job's driver log; with --follow, live over the WebSocket until the job ends")
      .argument('<job>', 'the submission id (a study run id)')
      .requiredOption('--ray <url>', 'the Ray dashboard address, e.g. http://127.0.0.1:8265')
      .option('--follow', 'follow the log live until the job ends (exit code 2 if it failed or was stopped)'),
  ).action(async (id: string, opts: RayFlags & { follow?: boolean }) => {
    const client = rayClient(opts);
    if (!opts.follow) return void process.stdout.write(await client.logs(id));
    const ctl = new AbortController();
    const onSig = () => ctl.abort();
    process.on('SIGINT', onSig);
    try {
      const r = await followJobLogs(client, id, {
        signal: ctl.signal,
        onText: (t) => process.stdout.write(t),
        onReconnect: (n, why) =>
          process.stderr.write(`mars-lab: log socket dropped (${why}); reconnect ${n}, gap filled from the full log\n`),
      });
      if (r.aborted) {
        return void process.stderr.write(
          `stopped following; job ${id} keeps running (stop it: mars-lab jobs stop ${id} --ray ${client.where})\n`,
        );
      }
      if (r.job && r.job.status !== 'SUCCEEDED') {
        throw new UserError(
          `Ray job '${id}' ${r.job.status.toLowerCase()}${r.job.message ? `: ${r.job.message.split('\n')[0]}` : ''}`,
        );
      }
    } finally {
      process.off('SIGINT', onSig);
    }
  });

  addRayConnectionOptions(
    jobs
      .command('stop')
      .description('stop a job (Ray sends SIGTERM: a train run checkpoints and stops)')
      .argument('<job>', 'the submission id (a study run id)')
      .requiredOption('--ray <url>', 'the Ray dashboard address, e.g. http://127.0.0.1:8265'),
  ).action(async (id: string, opts: RayFlags) => {
    const client = rayClient(opts);
    const before = await client.job(id);
    if (TERMINAL_STATUSES.has(before.status)) return console.log(`job ${tt(id)} had already ended (${before.status})`);
    const stopped = await client.stop(id);
    console.log(stopped ? `asked Ray to stop job ${tt(id)}` : `job ${tt(id)} was not running; nothing to stop`);
  });
}
