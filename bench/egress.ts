/**
 * Egress throughput (issue 8): a 64 MiB file downloaded over plain HTTP with curl from a sandbox whose
 * policy is `allow:files.test` — through the daemon's filtering proxy, reached over the sandbox's
 * loopback — against the same download with curl from the host's root namespace, straight to the server.
 * The server is `python3 -m http.server` in a network namespace of its own on a documentation address
 * (test/helpers/test-hosts.ts: 198.51.100.0/24 and 203.0.113.0/24, never this machine's 192.0.2.0/24
 * uplink), joined to the host by a veth pair; the daemon knows the name from FORKBOX_EGRESS_HOSTS (no
 * DNS). Throughput is curl's own (bytes / its total time) on both sides, so the exec round trip is not
 * counted. Samples are interleaved; the namespace, veth and file are removed at the end.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { PORT, SERVER_A, startTestHosts, type TestHosts } from '../test/helpers/test-hosts.ts';
import { type BenchContext, type Benchmark, killAll } from './lib/context.ts';
import { type DaemonHandle, startDaemon } from './lib/env.ts';
import { emptyResult, ratio, row } from './lib/report.ts';
import { IDLE_GAP_MS, sleep } from './lib/stats.ts';
import { timedSpawn } from './lib/timed-spawn.ts';

const NAME = 'egress';
const FILE_BYTES = 64 * 2 ** 20;
const HOST_NAME = 'files.test';
/** curl's report: bytes downloaded and its total time in seconds. */
const CURL_ARGS = [
  '-sS',
  '--fail',
  '-o',
  '/dev/null',
  '--max-time',
  '300',
  '-w',
  '%{size_download} %{time_total}',
];

/** MiB/s from curl's `-w` line; fails unless the whole file came. */
function throughput(report: string, where: string): number {
  const [size, secs] = report.trim().split(' ').map(Number);
  if (size !== FILE_BYTES || secs === undefined || !(secs > 0))
    throw new Error(`${where}: curl reported '${report.trim()}', expected ${FILE_BYTES} bytes`);
  return size / 2 ** 20 / secs;
}

function writeRandomFile(path: string): void {
  const fd = openSync(path, 'w');
  try {
    // Random bytes: nothing on the way can make them smaller.
    for (let done = 0; done < FILE_BYTES; done += 2 ** 20) writeSync(fd, randomBytes(2 ** 20));
  } finally {
    closeSync(fd);
  }
}

async function startDaemonWithHosts(ctx: BenchContext): Promise<DaemonHandle> {
  const saved = process.env.FORKBOX_EGRESS_HOSTS;
  process.env.FORKBOX_EGRESS_HOSTS = `${HOST_NAME}=${SERVER_A}`;
  try {
    return await startDaemon(ctx.log);
  } finally {
    if (saved === undefined) delete process.env.FORKBOX_EGRESS_HOSTS;
    else process.env.FORKBOX_EGRESS_HOSTS = saved;
  }
}

export const egressBench: Benchmark = {
  name: NAME,
  description:
    'HTTP download of 64 MiB from a sandbox (network allow, via the proxy) against curl on the host',
  async run(ctx: BenchContext) {
    const out = emptyResult();
    let hosts: TestHosts | undefined;
    let daemon: DaemonHandle | undefined;
    const ids: string[] = [];
    const s = { sandbox: [] as number[], host: [] as number[] };
    try {
      hosts = await startTestHosts();
      writeRandomFile(join(hosts.dir, 'big.bin'));
      daemon = await startDaemonWithHosts(ctx);
      const api = daemon.client;
      const sb = (await api.createSandbox({ network: `allow:${HOST_NAME}` })).id;
      ids.push(sb);
      for (let i = 0; i < ctx.runs; i++) {
        await sleep(IDLE_GAP_MS);
        const h = await timedSpawn('curl', [...CURL_ARGS, `http://${SERVER_A}:${PORT}/big.bin`]);
        s.host.push(throughput(h.stdout, 'host'));
        await sleep(IDLE_GAP_MS);
        const r = await api.exec(sb, {
          argv: ['curl', ...CURL_ARGS, `http://${HOST_NAME}:${PORT}/big.bin`],
          timeoutSeconds: 300,
        });
        if (r.exitCode !== 0) throw new Error(`curl in ${sb} exited ${r.exitCode}: ${r.stderr}`);
        s.sandbox.push(throughput(r.stdout, 'sandbox'));
      }
    } finally {
      if (daemon) {
        await killAll(daemon.client, ids, ctx.log);
        await daemon.stop().catch((e: unknown) => ctx.log(`${NAME}: daemon cleanup failed: ${String(e)}`));
      }
      hosts?.close();
    }
    const sbRow = row(NAME, 'sandbox (allow list, via the proxy): curl', 'MiB/s', s.sandbox);
    const hostRow = row(NAME, 'peer: curl on the host, direct', 'MiB/s', s.host);
    out.rows.push(sbRow, hostRow);
    out.ratios.push(ratio(NAME, 'proxied / direct throughput', sbRow, hostRow));
    out.notes.push(
      `64 MiB of random bytes over plain HTTP from python3 -m http.server in a network namespace (veth, ${SERVER_A}); MiB/s = bytes / curl's time_total`,
    );
    return out;
  },
};
