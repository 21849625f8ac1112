/**
 * `npm run bench` — forkbox's benchmarks. Medians and p90 over repeated runs, through the daemon's API
 * from a long-lived client and in-process, with ratios against a cold `runc run` of the same image
 * measured in the same run. Needs root and the default image (`sudo npm run setup`).
 *
 *   npm run bench -- [--only NAME[,NAME]] [--runs N] [--json] [--surface daemon|in-process]
 *
 * The table (or JSON) goes to stdout; progress goes to stderr.
 */
import { cpus, loadavg, release } from 'node:os';
import { parseArgs } from 'node:util';
import { browserBench } from './browser.ts';
import { cliStartup } from './cli-startup.ts';
import { createFirstExec } from './create-first-exec.ts';
import { createMany } from './create-many.ts';
import { diskQuota } from './disk-quota.ts';
import { egressBench } from './egress.ts';
import { execRoundTrip } from './exec-roundtrip.ts';
import { forkBench } from './fork.ts';
import { gvisorBench } from './gvisor.ts';
import { imageCreate } from './image-create.ts';
import { imagePull } from './image-pull.ts';
import type { BenchContext, Benchmark } from './lib/context.ts';
import { type DaemonHandle, type InProcessHandle, openInProcess, startDaemon, stderrLog } from './lib/env.ts';
import { createPeer, type Peer } from './lib/peer.ts';
import { type BenchResult, renderTable } from './lib/report.ts';
import { mcpOverhead } from './mcp.ts';
import { memoryPerSandbox } from './memory.ts';
import { noPython } from './no-python.ts';
import { otherFloods } from './other-floods.ts';
import { outputFlood } from './output-flood.ts';
import { peerRunc } from './peer.ts';
import { projectBench } from './project.ts';
import { replEval } from './repl-eval.ts';
import { retentionBench } from './retention.ts';
import { toolsetsBench } from './toolsets.ts';
import { warmPool } from './warm-pool.ts';

const BENCHMARKS: Benchmark[] = [
  createFirstExec,
  execRoundTrip,
  replEval,
  createMany,
  memoryPerSandbox,
  forkBench,
  gvisorBench,
  diskQuota,
  retentionBench,
  mcpOverhead,
  toolsetsBench,
  outputFlood,
  otherFloods,
  cliStartup,
  projectBench,
  egressBench,
  imagePull,
  imageCreate,
  noPython,
  warmPool,
  browserBench,
  peerRunc,
];
const MIN_RUNS = 20;

function usage(): string {
  return [
    'usage: npm run bench -- [--only NAME[,NAME]] [--runs N] [--json] [--surface daemon|in-process]',
    'benchmarks:',
    ...BENCHMARKS.map((b) => `  ${b.name.padEnd(10)} ${b.description}`),
  ].join('\n');
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      only: { type: 'string', multiple: true },
      runs: { type: 'string', default: '30' },
      json: { type: 'boolean', default: false },
      surface: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${usage()}\n`);
    return 0;
  }
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) {
    process.stderr.write(`--runs must be a positive integer\n${usage()}\n`);
    return 2;
  }
  if (runs < MIN_RUNS)
    stderrLog(`--runs ${runs} is under ${MIN_RUNS}: fine for a try, not for published figures`);
  const only = (values.only ?? []).flatMap((s) => s.split(',')).filter((s) => s !== '');
  const unknown = only.filter((n) => !BENCHMARKS.some((b) => b.name === n));
  if (unknown.length > 0) {
    process.stderr.write(`unknown benchmark(s): ${unknown.join(', ')}\n${usage()}\n`);
    return 2;
  }
  const surfaces = values.surface ?? ['daemon', 'in-process'];
  if (surfaces.some((s) => s !== 'daemon' && s !== 'in-process') || surfaces.length === 0) {
    process.stderr.write(`--surface takes daemon or in-process\n${usage()}\n`);
    return 2;
  }
  if (process.getuid?.() !== 0) {
    process.stderr.write('the benchmarks need root (they create sandboxes and run runc): run with sudo\n');
    return 2;
  }
  const selected = only.length > 0 ? BENCHMARKS.filter((b) => only.includes(b.name)) : BENCHMARKS;

  let daemon: DaemonHandle | null = null;
  let inproc: InProcessHandle | null = null;
  let peer: Peer | null = null;
  let interrupted = false;
  const onSignal = () => {
    // A second signal means now: the current step may be stuck.
    if (interrupted) {
      stderrLog('interrupted twice: exiting without cleaning up (see /var/tmp/forkbox-bench)');
      process.exit(130);
    }
    // Finish the current step and clean up rather than leaving sandboxes and mounts behind.
    interrupted = true;
    stderrLog('interrupted: cleaning up after the current step (signal again to exit at once)');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const results: { name: string; result: BenchResult }[] = [];
  const started = new Date();
  const loadBefore = loadavg();
  try {
    if (surfaces.includes('daemon')) daemon = await startDaemon(stderrLog);
    if (surfaces.includes('in-process')) inproc = await openInProcess(stderrLog);
    peer = createPeer(stderrLog);
    const ctx: BenchContext = {
      runs,
      surfaces: [daemon?.surface, inproc?.surface].filter((s) => s !== undefined),
      peer,
      log: stderrLog,
      ...(daemon ? { daemonPid: daemon.pid } : {}),
    };
    for (const b of selected) {
      if (interrupted) break;
      stderrLog(`${b.name}: ${b.description} (${runs} runs)`);
      const t0 = Date.now();
      results.push({ name: b.name, result: await b.run(ctx) });
      stderrLog(`${b.name}: done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
  } finally {
    stderrLog('cleaning up');
    peer?.close();
    await inproc?.stop().catch((e: unknown) => stderrLog(`in-process engine cleanup failed: ${String(e)}`));
    await daemon?.stop().catch((e: unknown) => stderrLog(`daemon cleanup failed: ${String(e)}`));
  }

  const cpu = cpus();
  // The load average tells how noisy the (shared) machine was while the figures were taken.
  const load = { before: loadBefore, after: loadavg() };
  const machine = {
    cpus: cpu.length,
    model: cpu[0]?.model ?? 'unknown',
    kernel: release(),
    node: process.version,
  };
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ date: started.toISOString(), machine, load, runs, surfaces, benchmarks: results }, null, 2)}\n`,
    );
  } else {
    process.stdout.write(
      `forkbox benchmarks — ${started.toISOString()} — ${machine.cpus} × ${machine.model}, Linux ${machine.kernel}, Node ${machine.node}, ${runs} runs\n` +
        `load average (1 min) ${load.before[0]?.toFixed(2)} before, ${load.after[0]?.toFixed(2)} after\n\n`,
    );
    process.stdout.write(`${renderTable(results.map((r) => r.result))}\n`);
  }
  return interrupted ? 130 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`benchmark failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = 1;
  },
);
