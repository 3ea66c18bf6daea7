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

/** Below this a phase is over before a line about its bytes could help. */
const WORTH_A_LINE = 10e6;

/** 44.9 kB, 98.4 MB. */
export function sizeText(n: number): string {
  return n < 1e6 ? `${(n / 1e3).toFixed(1)} kB` : `${(n / 1e6).toFixed(1)} MB`;
}

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
        if (total === undefined || total < WORTH_A_LINE) return;
        const q = Math.floor((4 * done) / total);
        if (q > quarter) {
          quarter = q;
          stream.write(`model fetch: ${label} ${sizeText(done)} of ${sizeText(total)}\n`);
        }
        return;
      }
      if (!bar || barLabel !== label) {
        endBytes();
        barLabel = label;
        bar = new cliProgress.SingleBar(
          {
            format: `${label} |{bar}| {percentage}% | {size} of {totalSize} | ETA {eta_formatted}`,
            stream,
            hideCursor: true,
          },
          cliProgress.Presets.shades_classic,
        );
        bar.start(total ?? done, done, {
          size: sizeText(done),
          totalSize: total === undefined ? '?' : sizeText(total),
        });
      }
      if (total === undefined) bar.setTotal(done);
      bar.update(done, { size: sizeText(done) });
    },
    endBytes,
  };
}
