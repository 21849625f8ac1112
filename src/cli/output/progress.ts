/** Progress display for long operations (image builds/imports), on stderr: a bar on a TTY, lines otherwise. */
import cliProgress from 'cli-progress';
import type { ProgressEvent } from '../../service/api.ts';

export interface ProgressDisplay {
  update(e: ProgressEvent): void;
  stop(): void;
}

export function createProgressDisplay(stderr: NodeJS.WriteStream = process.stderr): ProgressDisplay {
  let phase: string | undefined;
  let bar: cliProgress.SingleBar | undefined;
  const stopBar = () => {
    bar?.stop();
    bar = undefined;
  };
  return {
    update(e) {
      if (e.phase !== phase) {
        stopBar();
        phase = e.phase;
        stderr.write(`==> ${e.phase}: ${e.message}\n`);
      }
      if (stderr.isTTY && e.total !== undefined && e.total > 0) {
        if (!bar) {
          bar = new cliProgress.SingleBar(
            { stream: stderr, format: '    [{bar}] {percentage}% {value}/{total} {msg}', hideCursor: true },
            cliProgress.Presets.shades_classic,
          );
          bar.start(e.total, e.current ?? 0, { msg: e.message });
        }
        bar.setTotal(e.total);
        bar.update(e.current ?? 0, { msg: e.message });
      }
    },
    stop: stopBar,
  };
}
