/**
 * What disk limits cost. btrfs: the source's pause window of a fork (the read-only snapshot happens in
 * it) with btrfs simple quotas on, against the same forks on a volume without quotas
 * (FORKBOX_DISK_LIMITS=off), with 0, 30 and 300 MB just written; samples interleaved so both see the
 * same load. copy driver: creating a sandbox with a disk limit (its own ext4 image: mkfs.ext4, a loop
 * device, a mount) against one without.
 */
import { rmSync } from 'node:fs';
import { type OpenedEngine, openEngine } from '../src/composition.ts';
import type { ForkboxApi } from '../src/service/api.ts';
import { type BenchContext, type Benchmark, killAll } from './lib/context.ts';
import { makeStateDir } from './lib/env.ts';
import { type BenchResult, emptyResult, ratio, row } from './lib/report.ts';
import { nowMs, sleep } from './lib/stats.ts';

const NAME = 'disk-quota';
const quiet = {
  debug: () => undefined,
  info: () => undefined,
  warn: (o: object | string, m?: string) =>
    process.stderr.write(`[disk warn] ${JSON.stringify(o)} ${m ?? ''}\n`),
  error: (o: object | string, m?: string) =>
    process.stderr.write(`[disk error] ${JSON.stringify(o)} ${m ?? ''}\n`),
};

interface Side {
  tag: string;
  opened: OpenedEngine;
  stateDir: string;
}

async function open(tag: string, storage: 'btrfs' | 'copy', limits: 'on' | 'off'): Promise<Side> {
  const stateDir = makeStateDir(`disk-${tag}`);
  const saved = process.env.FORKBOX_DISK_LIMITS;
  process.env.FORKBOX_DISK_LIMITS = limits;
  try {
    const opened = await openEngine({ stateDir, log: quiet, reapIntervalMs: 0, storage });
    const caps = (await opened.api.status()).capabilities;
    if (caps.limits.disk !== (limits === 'on')) throw new Error(`${tag}: disk limits are not ${limits}`);
    return { tag, opened, stateDir };
  } finally {
    if (saved === undefined) delete process.env.FORKBOX_DISK_LIMITS;
    else process.env.FORKBOX_DISK_LIMITS = saved;
  }
}

async function close(s: Side | undefined): Promise<void> {
  if (!s) return;
  await s.opened.close({ killSandboxes: true });
  rmSync(s.stateDir, { recursive: true, force: true });
}

async function forkPause(api: ForkboxApi, src: string, mb: number, ctx: BenchContext): Promise<number> {
  const w = await api.exec(src, {
    cmd: `rm -f /root/blob; ${mb > 0 ? `head -c ${mb}M /dev/urandom > /root/blob` : 'true'}`,
    timeoutSeconds: 120,
  });
  if (w.exitCode !== 0) throw new Error(`writing ${mb} MB failed: ${w.stderr}`);
  const r = await api.forkSandbox(src, { n: 1, memoryMb: 64 });
  const ids = r.children.flatMap((c) => (c.sandbox ? [c.sandbox.id] : []));
  if (ids.length !== 1) throw new Error(`fork failed: ${JSON.stringify(r.children)}`);
  await killAll(api, ids, ctx.log);
  return r.pauseMs;
}

async function btrfsPauses(ctx: BenchContext, out: BenchResult): Promise<void> {
  let on: Side | undefined;
  let off: Side | undefined;
  try {
    on = await open('squota', 'btrfs', 'on');
    off = await open('noquota', 'btrfs', 'off');
    const sides = [on, off];
    const srcs = await Promise.all(
      sides.map(async (s) => (await s.opened.api.createSandbox({ memoryMb: 1024 })).id),
    );
    for (const mb of [0, 30, 300]) {
      const samples: number[][] = [[], []];
      for (let i = 0; i < ctx.runs; i++) {
        for (const k of [0, 1]) {
          await sleep(50);
          const side = sides[k] as Side;
          samples[k]?.push(await forkPause(side.opened.api, srcs[k] as string, mb, ctx));
        }
      }
      const a = row(
        NAME,
        `btrfs, simple quotas: source pause, ${mb} MB just written`,
        'ms',
        samples[0] ?? [],
      );
      const b = row(NAME, `btrfs, no quotas: source pause, ${mb} MB just written`, 'ms', samples[1] ?? []);
      out.rows.push(a, b);
      out.ratios.push(ratio(NAME, `pause with quotas / without, ${mb} MB`, a, b));
      ctx.log(
        `${NAME}: ${mb} MB: quotas p50 ${a.stats.p50.toFixed(2)} ms, none ${b.stats.p50.toFixed(2)} ms`,
      );
    }
  } finally {
    await close(on);
    await close(off);
  }
}

async function copyCreates(ctx: BenchContext, out: BenchResult): Promise<void> {
  let on: Side | undefined;
  let off: Side | undefined;
  try {
    on = await open('copy-limits', 'copy', 'on');
    off = await open('copy-nolimits', 'copy', 'off');
    const sides = [on, off];
    // The first create starts the template.
    for (const s of sides) await killAll(s.opened.api, [(await s.opened.api.createSandbox({})).id], ctx.log);
    const samples: number[][] = [[], []];
    for (let i = 0; i < ctx.runs; i++) {
      for (const k of [0, 1]) {
        const api = (sides[k] as Side).opened.api;
        await sleep(50);
        const t0 = nowMs();
        const id = (await api.createSandbox({})).id;
        samples[k]?.push(nowMs() - t0);
        await killAll(api, [id], ctx.log);
      }
    }
    const a = row(NAME, 'copy: create, default disk limit (own ext4 image)', 'ms', samples[0] ?? []);
    const b = row(NAME, 'copy: create, no disk limit (plain directory)', 'ms', samples[1] ?? []);
    out.rows.push(a, b);
    out.ratios.push(ratio(NAME, 'copy create with a disk limit / without', a, b));
  } finally {
    await close(on);
    await close(off);
  }
}

export const diskQuota: Benchmark = {
  name: NAME,
  description: 'fork pause with and without btrfs simple quotas; copy-driver create with a disk limit',
  async run(ctx) {
    const out = emptyResult();
    await btrfsPauses(ctx, out);
    await copyCreates(ctx, out);
    return out;
  },
};
