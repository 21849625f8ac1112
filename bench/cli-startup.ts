/**
 * (8) CLI start-up: `forkbox` as a whole process, from spawn to exit, against the benchmark's running
 * daemon (its state dir), the way a user or a script calls it:
 *
 * - `forkbox --version` (start-up alone), `forkbox ls` (+ one daemon call), `forkbox run -- true`
 *   (create, exec, kill: the `docker run --rm` of forkbox), `forkbox exec ID -- true` (a warm sandbox);
 * - the floor: an empty `node` process, which no JavaScript change can go below;
 * - peers in the same run: `docker run --rm IMAGE true` (a private dockerd from Debian's docker.io, when
 *   installed) and a cold `runc run` of the same image (overlay mount + runc; lib/peer.ts).
 *
 * The probes are sampled round-robin (one of each per iteration, each after an idle gap) so load drifts
 * hit all alike. Also reported: how many module files each command loads (lib/module-trace.mjs), and
 * whether this Node has a compile cache to offer.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type BenchContext, type Benchmark, killAll } from './lib/context.ts';
import { type DockerPeer, dockerPeerUnavailable, startDockerPeer } from './lib/docker-peer.ts';
import { type BenchResult, emptyResult, type Row, ratio, row } from './lib/report.ts';
import { IDLE_GAP_MS, nowMs, sleep } from './lib/stats.ts';

const NAME = 'cli';
/** Issue #12's goal for `forkbox run -- true` as a whole process (the next step is 60 ms). */
const RUN_TARGET_MS = 250;
const WARMUP = 3;
const REPO = resolve(import.meta.dirname, '..');
const BIN = join(REPO, 'bin', 'forkbox.js');
const TRACE_HOOK = join(REPO, 'bench', 'lib', 'module-trace.mjs');
/** Bound on what a probe's stderr may hold in memory (it is only shown when the probe fails). */
const MAX_STDERR = 64 * 1024;
/** A probe that takes longer than this is stuck, not slow: fail the benchmark. */
const PROBE_TIMEOUT_MS = 60_000;

interface Probe {
  label: string;
  run: () => Promise<number>;
  samples: number[];
}

/** Spawn `process.execPath args`, wait for it to exit 0; wall time in ms from spawn to exit. */
function timedNode(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise((res, rej) => {
    const t0 = nowMs();
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < MAX_STDERR) stderr += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), PROBE_TIMEOUT_MS);
    child.on('error', rej);
    child.on('close', (code, signal) => {
      const ms = nowMs() - t0;
      clearTimeout(timer);
      if (code === 0) res(ms);
      else rej(new Error(`node ${args.join(' ')} exited ${code ?? signal}: ${stderr.trim()}`));
    });
  });
}

/** How many distinct module files `forkbox args` loads. */
async function moduleCount(stateDir: string, args: string[]): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'forkbox-trace-'));
  const file = join(dir, 'modules');
  try {
    await timedNode(['--import', TRACE_HOOK, BIN, '--state-dir', stateDir, ...args], {
      ...process.env,
      FORKBOX_MODULE_TRACE: file,
    });
    return new Set(
      readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l !== ''),
    ).size;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The Docker peer, or why there is none. */
async function dockerPeer(ctx: BenchContext): Promise<DockerPeer | string> {
  const why = dockerPeerUnavailable();
  if (why !== null) return why;
  try {
    return await startDockerPeer(ctx.log);
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

function compileCacheNote(): string {
  const mod = createRequire(import.meta.url)('node:module') as { enableCompileCache?: unknown };
  return typeof mod.enableCompileCache === 'function'
    ? `Node ${process.version} has module.enableCompileCache (not used by bin/forkbox.js yet: measure it here first)`
    : `Node ${process.version} has no compile cache for ES modules (module.enableCompileCache and NODE_COMPILE_CACHE arrived in Node 22.1): not measured`;
}

async function sample(ctx: BenchContext, probes: Probe[]): Promise<void> {
  for (let i = 0; i < WARMUP; i++) for (const p of probes) await p.run();
  for (let i = 0; i < ctx.runs; i++) {
    for (const p of probes) {
      await sleep(IDLE_GAP_MS);
      p.samples.push(await p.run());
    }
  }
}

function report(out: BenchResult, probes: Probe[]): void {
  const rows = new Map<string, Row>();
  for (const p of probes) {
    const r = row(
      NAME,
      p.label,
      'ms',
      p.samples,
      p.label.includes(' run -- true') ? RUN_TARGET_MS : undefined,
    );
    rows.set(p.label, r);
    out.rows.push(r);
  }
  const get = (prefix: string) => [...rows.entries()].find(([l]) => l.startsWith(prefix))?.[1];
  const pairs: [string, string][] = [
    ['forkbox run -- true', 'docker run --rm'],
    ['forkbox run -- true without', 'docker run --rm'],
    ['forkbox run -- true', 'runc run'],
    ['forkbox run -- true without', 'runc run'],
    ['forkbox exec ID -- true', 'runc run'],
    ['forkbox --version', 'node -e'],
  ];
  for (const [a, b] of pairs) {
    const ra = get(a);
    const rb = get(b);
    if (ra && rb) out.ratios.push(ratio(NAME, `${ra.label} / ${rb.label}`, ra, rb));
  }
}

export const cliStartup: Benchmark = {
  name: NAME,
  description:
    'whole-process CLI: forkbox --version, ls, run -- true, exec ID -- true vs docker run --rm and runc run',
  async run(ctx: BenchContext) {
    const out = emptyResult();
    const daemon = ctx.surfaces.find((s) => s.name === 'daemon');
    if (!daemon)
      throw new Error("the CLI benchmark runs against the daemon: don't pass --surface in-process alone");
    const cli = (...args: string[]) => timedNode([BIN, '--state-dir', daemon.stateDir, ...args]);
    const docker = await dockerPeer(ctx);
    const sandbox = (await daemon.api.createSandbox({})).id;
    try {
      const probes: Probe[] = [
        {
          label: "node -e '' (an empty Node process: the floor)",
          run: () => timedNode(['-e', '']),
          samples: [],
        },
        { label: 'forkbox --version', run: () => cli('--version'), samples: [] },
        { label: 'forkbox ls', run: () => cli('ls'), samples: [] },
        { label: 'forkbox run -- true', run: () => cli('run', '--', 'true'), samples: [] },
        { label: 'forkbox exec ID -- true', run: () => cli('exec', sandbox, '--', 'true'), samples: [] },
        {
          label: 'runc run /bin/true (cold, overlay mount + run)',
          run: async () => (await ctx.peer.run(['/bin/true'])).totalMs,
          samples: [],
        },
      ];
      if (typeof docker !== 'string') {
        probes.push({
          label: 'docker run --rm IMAGE true',
          run: () => docker.runOnce(['true']),
          samples: [],
        });
      } else out.notes.push(`peer docker run --rm not measured: ${docker}`);
      if (process.env.NODE_EXTRA_CA_CERTS) {
        // Node reads the file at every start: a cost every CLI call pays in such an environment.
        const env = { ...process.env };
        delete env.NODE_EXTRA_CA_CERTS;
        probes.push(
          {
            label: "node -e '' without NODE_EXTRA_CA_CERTS",
            run: () => timedNode(['-e', ''], env),
            samples: [],
          },
          {
            label: 'forkbox run -- true without NODE_EXTRA_CA_CERTS',
            run: () => timedNode([BIN, '--state-dir', daemon.stateDir, 'run', '--', 'true'], env),
            samples: [],
          },
        );
        out.notes.push(
          'NODE_EXTRA_CA_CERTS is set here: every Node process (the floor, every forkbox call) reads that file at start, before any JavaScript runs; the rows "without" show the same without it',
        );
      }
      await sample(ctx, probes);
      report(out, probes);
      const counts: string[] = [];
      for (const args of [['--version'], ['ls'], ['run', '--', 'true'], ['exec', sandbox, '--', 'true']]) {
        counts.push(`${args.join(' ').replace(sandbox, 'ID')}: ${await moduleCount(daemon.stateDir, args)}`);
      }
      out.notes.push(`module files loaded per command (lib/module-trace.mjs): ${counts.join('; ')}`);
      out.notes.push(compileCacheNote());
    } finally {
      await killAll(daemon.api, [sandbox], ctx.log);
      if (typeof docker !== 'string') await docker.close();
    }
    return out;
  },
};
