/**
 * Retention in a real SQLite file: exec output of ended sandboxes dropped, ended sandboxes pruned after
 * the retention time (never a tombstone, a live child's parent or a live sandbox's alias), pages given
 * back, and the status/list/name queries served by indexes with 100,000 ended rows (EXPLAIN QUERY PLAN,
 * not timings: the timings are bench/retention.ts).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { ExecRecord, SandboxRecord } from '../../src/domain/types.ts';
import { createRetention } from '../../src/service/retention.ts';
import { openSqliteStore, type SqliteStore } from '../../src/storage/sqlite/index.ts';
import { RETENTION_SQL } from '../../src/storage/sqlite/retention-queries.ts';
import { SANDBOX_SQL } from '../../src/storage/sqlite/sandbox-queries.ts';
import { sandboxRecord } from '../helpers/sandbox-record.ts';

let dir: string;
let n = 0;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'forkbox-retention-'));
});
after(() => {
  rmSync(dir, { recursive: true, force: true });
});

function fresh(now: () => number = Date.now): { store: SqliteStore; path: string } {
  const path = join(dir, `db${++n}`, 'forkbox.db');
  return { store: openSqliteStore({ path, now }), path };
}

const sb = sandboxRecord;

function ex(id: string, sandboxId: string): ExecRecord {
  return {
    id,
    sandboxId,
    idempotencyKey: null,
    command: ['true'],
    state: 'exited',
    exitCode: 0,
    signal: null,
    timedOut: false,
    truncated: false,
    oomKilled: false,
    startedAt: 1000,
    endedAt: 1001,
    leftovers: 0,
    tree: null,
    streams: null,
  };
}

/** A sandbox through creating → running → killed, with `chunks` output chunks of `size` bytes. */
function endedWithOutput(store: SqliteStore, id: string, chunks: number, size = 1024): void {
  store.insertSandbox(sb(id));
  store.transitionSandbox(id, 'running');
  store.insertExec(ex(`ex-${id}`, id));
  for (let i = 0; i < chunks; i++)
    store.appendExecOutput(`ex-${id}`, { seq: i, stream: 'stdout', data: Buffer.alloc(size, 7) }, 1 << 30);
  store.transitionSandbox(id, 'killing');
  store.transitionSandbox(id, 'killed', { hostPid: null });
}

describe('retention: output of ended sandboxes', () => {
  test('is dropped by the sweep once the sandbox ends, in bounded batches; a live one keeps its own', () => {
    const { store } = fresh();
    try {
      endedWithOutput(store, 'dead', 5000);
      store.insertSandbox(sb('alive'));
      store.transitionSandbox('alive', 'running');
      store.insertExec(ex('ex-alive', 'alive'));
      store.appendExecOutput('ex-alive', { seq: 0, stream: 'stdout', data: Buffer.from('keep me') }, 1 << 20);
      const r = createRetention({ store, retentionMs: 3600_000 });
      const first = r.sweep();
      assert.ok(first.outputChunks > 0 && first.outputChunks <= 2048, `first sweep: ${first.outputChunks}`);
      let total = first.outputChunks;
      for (let i = 0; i < 10 && total < 5000; i++) total += r.sweep().outputChunks;
      assert.equal(total, 5000);
      assert.deepEqual(store.readExecOutput('ex-dead', -1), []);
      assert.equal(store.readExecOutput('ex-alive', -1).length, 1);
      // The exec record stays (within the retention time), without output.
      assert.equal(store.getExec('ex-dead')?.state, 'exited');
      assert.deepEqual(r.sweep().pruned, []);
    } finally {
      store.close();
    }
  });
});

describe('retention: ended sandboxes', () => {
  test('are pruned after the retention time with their execs; tombstones, parents and aliases stay', () => {
    let t = 10_000;
    const { store } = fresh(() => t);
    try {
      const end = (id: string, over: Partial<SandboxRecord> = {}) => {
        store.insertSandbox(sb(id, over));
        store.transitionSandbox(id, 'running');
        store.transitionSandbox(id, 'killing');
        store.transitionSandbox(id, 'killed', { hostPid: null, ...over });
      };
      end('old');
      store.insertExec(ex('ex-old', 'old'));
      end('tomb', { hostPid: 4242, runtime: { tombstone: true } });
      end('parent');
      store.insertSandbox(sb('kid', { parentId: 'parent' }));
      store.transitionSandbox('kid', 'running');
      end('alias', { runtime: { aliasOf: 'kid' } });
      t = 20_000;
      end('recent');
      const r = createRetention({ store, retentionMs: 5_000, now: () => t });
      const { pruned } = r.sweep();
      assert.deepEqual(pruned.sort(), ['old'], 'ended at 10 s, retention 5 s, now 20 s');
      assert.equal(store.getSandbox('old'), undefined);
      assert.equal(store.getExec('ex-old'), undefined, 'its execs go with it');
      for (const id of ['tomb', 'parent', 'alias', 'recent', 'kid']) assert.ok(store.getSandbox(id), id);
      // Once the child ends, its parent and the alias go too.
      store.transitionSandbox('kid', 'killing');
      store.transitionSandbox('kid', 'killed');
      t = 40_000;
      r.sweep();
      assert.deepEqual(
        ['parent', 'alias', 'recent', 'kid'].filter((id) => store.getSandbox(id)),
        [],
        'all pruned',
      );
      assert.ok(store.getSandbox('tomb'), 'a tombstone is never pruned');
    } finally {
      store.close();
    }
  });

  test('retention 0 prunes at the next sweep; the freed pages go back to the filesystem', () => {
    const { store, path } = fresh();
    try {
      for (let i = 0; i < 40; i++) endedWithOutput(store, `big${i}`, 100, 16 * 1024);
      const r = createRetention({ store, retentionMs: 0 });
      const sizeBefore = statSync(path).size + statSync(`${path}-wal`).size;
      let pruned = 0;
      // The daemon sweeps every second; each sweep frees a bounded number of pages.
      for (let i = 0; i < 50; i++) {
        const s = r.sweep();
        pruned += s.pruned.length;
        if (pruned === 40 && s.pagesFreed === 0 && s.outputChunks === 0) break;
      }
      assert.equal(pruned, 40);
      assert.deepEqual(store.listSandboxes(), []);
      const raw = new Database(path, { readonly: true });
      try {
        assert.equal(raw.pragma('auto_vacuum', { simple: true }), 2, 'auto_vacuum = INCREMENTAL');
      } finally {
        raw.close();
      }
      store.close();
      const db = new Database(path);
      try {
        db.pragma('wal_checkpoint(TRUNCATE)');
        assert.equal(db.pragma('freelist_count', { simple: true }), 0, 'no free page left in the file');
      } finally {
        db.close();
      }
      assert.ok(statSync(path).size < sizeBefore / 4, `file ${statSync(path).size} bytes, was ${sizeBefore}`);
    } finally {
      store.close();
    }
  });

  test('an existing database (auto_vacuum NONE) is converted by its migration', () => {
    const path = join(dir, `db${++n}`, 'forkbox.db');
    const { store: s1 } = { store: openSqliteStore({ path }) };
    s1.close();
    const raw = new Database(path);
    raw.pragma('auto_vacuum = NONE');
    raw.exec('VACUUM');
    // Back to a version-7 database: the later migrations' records, and what they added, are gone.
    raw.prepare('DELETE FROM schema_migrations WHERE version >= 8').run();
    raw.exec('ALTER TABLE sandboxes DROP COLUMN network');
    raw.exec('ALTER TABLE sandboxes DROP COLUMN ports');
    raw.exec(`DROP INDEX sandboxes_live_ns_name; DROP INDEX sandboxes_tenant_ns_name;
      ALTER TABLE sandboxes DROP COLUMN namespace;
      CREATE UNIQUE INDEX sandboxes_live_tenant_name ON sandboxes(tenant, name) WHERE state = 'running';
      CREATE INDEX sandboxes_tenant_name ON sandboxes(tenant, name, created_at);`);
    raw.exec('ALTER TABLE snapshots DROP COLUMN ports');
    raw.exec('ALTER TABLE snapshots DROP COLUMN namespace');
    raw.exec('ALTER TABLE template_configs DROP COLUMN pool');
    assert.equal(raw.pragma('auto_vacuum', { simple: true }), 0);
    raw.close();
    const s2 = openSqliteStore({ path });
    s2.close();
    const check = new Database(path, { readonly: true });
    try {
      assert.equal(check.pragma('auto_vacuum', { simple: true }), 2);
    } finally {
      check.close();
    }
  });
});

describe('queries stay indexed with 100,000 ended sandboxes', () => {
  let store: SqliteStore;
  let db: Database.Database;
  before(() => {
    const opened = fresh();
    store = opened.store;
    const ended = ['killed', 'failed', 'lost'] as const;
    store.atomically(() => {
      for (let i = 0; i < 100_000; i++) {
        store.insertSandbox(
          sb(`sb-end-${i}`, { state: ended[i % 3] ?? 'killed', tenant: i % 2 ? 'default' : 'other' }),
        );
      }
      for (let i = 0; i < 20; i++) store.insertSandbox(sb(`sb-live-${i}`, { state: 'running' }));
    });
    db = new Database(opened.path);
    db.exec('ANALYZE');
  });
  after(() => {
    db?.close();
    store?.close();
  });

  /** The plan's detail lines; fails on a full scan of the sandboxes table. */
  function plan(sql: string, ...args: unknown[]): string[] {
    const rows = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[];
    const lines = rows.map((r) => r.detail);
    for (const l of lines) {
      assert.doesNotMatch(
        l,
        /^SCAN (sandboxes|s|c|p)\b(?! USING)/,
        `a full table scan in:\n${lines.join('\n')}`,
      );
    }
    return lines;
  }

  test('status counts per state: one GROUP BY over the (tenant, state) index', () => {
    const lines = plan(RETENTION_SQL.countByState, 'default');
    assert.ok(
      lines.some((l) => /USING COVERING INDEX sandboxes_tenant_state \(tenant=\?\)/.test(l)),
      lines.join('\n'),
    );
    const counts = store.countSandboxesByState('default');
    assert.equal(counts.running, 20);
    assert.equal((counts.killed ?? 0) + (counts.failed ?? 0) + (counts.lost ?? 0), 50_000);
  });

  test('listing live sandboxes, resolving a name and finding pid-namespace holders use indexes', () => {
    const list = plan(SANDBOX_SQL.listByStates, {
      states: JSON.stringify(['creating', 'running', 'paused', 'killing']),
      labels: null,
      tenant: 'default',
      namespaces: null,
    });
    assert.ok(
      list.some((l) => /USING INDEX sandboxes_state \(state=\?\)/.test(l)),
      list.join('\n'),
    );
    const name = plan(SANDBOX_SQL.getByName, 'sb-end-5', 'default', 'default');
    assert.ok(
      name.some((l) =>
        /USING INDEX sandboxes_tenant_ns_name \(tenant=\? AND namespace=\? AND name=\?\)/.test(l),
      ),
      name.join('\n'),
    );
    plan(SANDBOX_SQL.listHolders);
    assert.equal(store.listSandboxes({ states: ['running'], tenant: 'default' }).length, 20);
    assert.equal(store.getSandboxByName('sb-end-5')?.state, 'lost', '5 % 3 = 2: lost');
  });

  test('the retention sweep finds its work by index', () => {
    const prune = plan(RETENTION_SQL.pruneCandidates, { before: Date.now(), max: 500 });
    assert.ok(
      prune.some((l) => /USING INDEX sandboxes_ended/.test(l)),
      prune.join('\n'),
    );
    plan(RETENTION_SQL.execWithOutput, 'sb-end-1');
    plan(RETENTION_SQL.dropChunks, { exec: 'ex-1', max: 10 });
  });
});
