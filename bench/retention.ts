/**
 * What a long history costs: `status` (counts per state) and `ls` (live sandboxes) of an engine whose
 * forkbox.db holds 100,000 ended sandboxes, against the same calls on an engine with none, and against
 * the way status counted before retention (every row of the tenant read, counted in JS), all in the
 * same run, samples interleaved.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { type OpenedEngine, openEngine } from '../src/composition.ts';
import { NETWORK_NONE } from '../src/domain/network.ts';
import type { SandboxRecord } from '../src/domain/types.ts';
import { openSqliteStore, type SqliteStore } from '../src/storage/sqlite/index.ts';
import type { BenchContext, Benchmark } from './lib/context.ts';
import { makeStateDir } from './lib/env.ts';
import { type BenchResult, emptyResult, ratio, row } from './lib/report.ts';
import { nowMs } from './lib/stats.ts';

const NAME = 'retention';
const ENDED = 100_000;
const quiet = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

function ended(i: number): SandboxRecord {
  return {
    id: `sb-hist-${i}`,
    name: `sb-hist-${i}`,
    tenant: 'default',
    namespace: 'default',
    session: null,
    state: (['killed', 'failed', 'lost'] as const)[i % 3] ?? 'killed',
    image: 'debian',
    templateId: 'tpl-hist',
    parentId: null,
    depth: 0,
    limits: { memoryBytes: 1 << 28, pids: 64, cpus: 1, diskBytes: 1 << 30, diskInodes: 10_000 },
    env: {},
    labels: { job: `j${i % 50}` },
    expiresAt: null,
    createdAt: Date.now() - 3600_000,
    updatedAt: Date.now() - 3600_000,
    hostPid: null,
    runtime: {},
    endReason: null,
    network: NETWORK_NONE,
  };
}

interface Side {
  opened: OpenedEngine;
  stateDir: string;
  /** A second connection to the same file, for the old way of counting. */
  store: SqliteStore;
}

async function open(tag: string, rows: number): Promise<Side> {
  const stateDir = makeStateDir(`retention-${tag}`);
  const path = join(stateDir, 'forkbox.db');
  const store = openSqliteStore({ path });
  store.atomically(() => {
    for (let i = 0; i < rows; i++) store.insertSandbox(ended(i));
  });
  // No sweep: the history must stay for the measurement (a day's retention would keep it too).
  const opened = await openEngine({ stateDir, log: quiet, reapIntervalMs: 0, retentionSweepMs: 0 });
  return { opened, stateDir, store };
}

async function close(s: Side | undefined): Promise<void> {
  if (!s) return;
  s.store.close();
  await s.opened.close({ killSandboxes: true });
  rmSync(s.stateDir, { recursive: true, force: true });
}

async function sample(fn: () => Promise<unknown> | unknown): Promise<number> {
  const t0 = nowMs();
  await fn();
  return nowMs() - t0;
}

export const retentionBench: Benchmark = {
  name: NAME,
  description: `status and ls with ${ENDED} ended sandboxes in forkbox.db, against none and the old count`,
  async run(ctx: BenchContext): Promise<BenchResult> {
    const out = emptyResult();
    let empty: Side | undefined;
    let full: Side | undefined;
    try {
      empty = await open('empty', 0);
      full = await open('full', ENDED);
      const e = empty;
      const f = full;
      const s: Record<string, number[]> = { se: [], sf: [], le: [], lf: [], old: [] };
      const oldCount = () => {
        const counts: Record<string, number> = {};
        for (const r of f.store.listSandboxes({ tenant: 'default' }))
          counts[r.state] = (counts[r.state] ?? 0) + 1;
        return counts;
      };
      for (let i = 0; i < ctx.runs; i++) {
        s.se?.push(await sample(() => e.opened.api.status()));
        s.sf?.push(await sample(() => f.opened.api.status()));
        s.le?.push(await sample(() => e.opened.api.listSandboxes()));
        s.lf?.push(await sample(() => f.opened.api.listSandboxes()));
        s.old?.push(await sample(oldCount));
      }
      const se = row(NAME, 'status, empty database', 'ms', s.se ?? []);
      const sf = row(NAME, `status, ${ENDED} ended sandboxes`, 'ms', s.sf ?? []);
      const le = row(NAME, 'ls (live), empty database', 'ms', s.le ?? []);
      const lf = row(NAME, `ls (live), ${ENDED} ended sandboxes`, 'ms', s.lf ?? []);
      const old = row(NAME, `old status count (every row read), ${ENDED} ended`, 'ms', s.old ?? []);
      out.rows.push(se, sf, le, lf, old);
      out.ratios.push(
        ratio(NAME, `status with ${ENDED} ended / empty`, sf, se),
        ratio(NAME, `ls with ${ENDED} ended / empty`, lf, le),
        ratio(NAME, 'old status count / status now, same history', old, sf),
      );
    } finally {
      await close(full);
      await close(empty);
    }
    return out;
  },
};
