/**
 * What a fetch tells the person waiting: one line per phase (downloading, checking, unpacking) on stderr, and the
 * bytes of a long phase as a cli-progress bar on a terminal, or a line at each quarter when stderr is a log (so
 * `npm test`'s output shows a fetch moving without a line per chunk). stdout stays for the command's answer.
 */
import cliProgress from 'cli-progress';

export interface FetchReporter {
  /** A phase starts: one line. */
  phase(line: string): void;
  /** Bytes of the current phase done so far, of `total` when known. */
  bytes(label: string, done: number, total: number | undefined): void;
  /** The current phase's bytes are over (closes a bar). */
  endBytes(): void;
}

export const silentReporter: FetchReporter = { phase: () => {}, bytes: () => {}, endBytes: () => {} };

const MB = 1e6;

export function terminalReporter(stream: NodeJS.WriteStream = process.stderr): FetchReporter {
  let bar: cliProgress.SingleBar | undefined;
  let barLabel = '';
  let quarter = 0;
  const endBytes = () => {
    bar?.stop();
    bar = undefined;
    barLabel = '';
    quarter = 0;
  };
  return {
    phase(line) {
      endBytes();
      stream.write(`model fetch: ${line}\n`);
    },
    bytes(label, done, total) {
      if (!stream.isTTY) {
        if (total === undefined || total <= 0) return;
        const q = Math.floor((4 * done) / total);
        if (q > quarter) {
          quarter = q;
          stream.write(`model fetch: ${label} ${(done / MB).toFixed(1)} of ${(total / MB).toFixed(1)} MB\n`);
        }
        return;
      }
      if (!bar || barLabel !== label) {
        endBytes();
        barLabel = label;
        bar = new cliProgress.SingleBar(
          {
            format: `${label} |{bar}| {percentage}% | {mb} of {totalMb} MB | ETA {eta_formatted}`,
            stream,
            hideCursor: true,
          },
          cliProgress.Presets.shades_classic,
        );
        bar.start(total ?? done, done, { mb: '0', totalMb: total === undefined ? '?' : (total / MB).toFixed(1) });
      }
      bar.update(done, { mb: (done / MB).toFixed(1) });
    },
    endBytes,
  };
}
