/**
 * Connection and file floods from one sandbox (issue #11: ~20,000 connections to its control socket ran
 * the daemon out of descriptors; 5 GB and 1,000,000 files written from a sandbox landed on the host). Each
 * runs as a background command in sandbox A while the shared harness (lib/flood.ts) reports the daemon's
 * RSS and fds and a second sandbox's exec latency, with and without the flood, in the same run.
 */
import type { ForkboxApi } from '../src/service/api.ts';
import type { BenchContext, Benchmark } from './lib/context.ts';
import { type Flood, measureFlood } from './lib/flood.ts';
import { emptyResult } from './lib/report.ts';

/** Python that opens and holds connections to the sandbox's control socket until killed. */
const CONNECT_AND_HOLD = [
  'import socket, resource, time',
  'soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)',
  'resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))',
  'held = []',
  'while True:',
  '    try:',
  '        s = socket.socket(socket.AF_UNIX)',
  '        s.connect("/.forkbox/inbox/ctl.sock")',
  '        held.append(s)',
  '    except OSError:',
  '        time.sleep(0.001)',
  '        if len(held) > 4000: held.pop(0).close()',
].join('\n');

/** Shell that writes small files and overwrites a big one without end (the disk limit stops it). */
const WRITE_FILES =
  'mkdir -p /tmp/flood; i=0; while :; do i=$((i+1)); echo $i > /tmp/flood/f$i || rm -rf /tmp/flood/*; ' +
  '[ $((i % 1000)) = 0 ] && dd if=/dev/zero of=/tmp/flood/big bs=1M count=64 2>/dev/null; done';

function background(name: string, argv: string[]): Flood {
  return {
    name,
    async start(api: ForkboxApi, id: string) {
      const rec = await api.startExec(id, { argv });
      return async () => {
        await api.cancelExec(id, rec.id);
      };
    },
  };
}

export const otherFloods: Benchmark = {
  name: 'other-floods',
  description:
    "daemon RSS/fds and another sandbox's exec latency while one sandbox floods connections or files",
  async run(ctx: BenchContext) {
    const out = emptyResult();
    const floods = [
      background('control-socket connection flood', ['python3', '-c', CONNECT_AND_HOLD]),
      background('file flood', ['sh', '-c', WRITE_FILES]),
    ];
    for (const f of floods) {
      const r = await measureFlood(ctx, 'other-floods', f);
      out.rows.push(...r.rows);
      out.ratios.push(...r.ratios);
      out.notes.push(...r.notes);
    }
    return out;
  },
};
