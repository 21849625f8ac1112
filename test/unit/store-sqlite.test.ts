import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { ForkboxError } from '../../src/domain/errors.ts';
import { LIVE_STATES } from '../../src/domain/sandbox-state.ts';
import type { ExecRecord, SandboxRecord, SnapshotRecord } from '../../src/domain/types.ts';
import { LATEST_SCHEMA_VERSION, openSqliteStore, type SqliteStore } from '../../src/storage/sqlite/index.ts';
import { MIGRATION_1_LIVE_STATES } from '../../src/storage/sqlite/migrations.ts';
import { sandboxRecord } from '../helpers/sandbox-record.ts';

let dir: string;
let n = 0;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'forkbox-store-'));
});
after(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A fresh database file per test, in a (nested, not yet existing) directory of the temp dir. */
function fresh(now?: () => number): { store: SqliteStore; path: string } {
  const path = join(dir, `db${++n}`, 'state', 'forkbox.db');
  return { store: openSqliteStore(now === undefined ? { path } : { path, now }), path };
}

function sb(id: string, over: Partial<SandboxRecord> = {}): SandboxRecord {
  return sandboxRecord(id, {
    limits: { memoryBytes: 512 * 1024 * 1024, pids: 128, cpus: 1.5, diskBytes: 1 << 30, diskInodes: 10_000 },
    env: { FOO: 'bar' },
    runtime: { cgroup: `/forkbox/${id}`, nested: { a: [1, 2] } },
    ports: [],
    ...over,
  });
}

function ex(id: string, sandboxId: string, over: Partial<ExecRecord> = {}): ExecRecord {
  return {
    id,
    sandboxId,
    idempotencyKey: null,
    command: ['sh', '-c', 'echo hi'],
    state: 'running',
    exitCode: null,
    signal: null,
    timedOut: false,
    truncated: false,
    oomKilled: false,
    startedAt: 2000,
    endedAt: null,
    leftovers: 0,
    tree: null,
    streams: null,
    ...over,
  };
}

function isCode(code: string, re?: RegExp) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof ForkboxError, `expected ForkboxError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (re) assert.match(e.message, re);
    return true;
  };
}

describe('sqlite store: sandboxes', () => {
  test('insert, get, get by name, list with state and label filters', () => {
    const { store } = fresh();
    try {
      store.insertSandbox(sb('a', { labels: { team: 'x', 'odd.key"[0]': 'v' }, createdAt: 1 }));
      store.insertSandbox(sb('b', { state: 'running', labels: { team: 'x' }, createdAt: 2 }));
      store.insertSandbox(sb('c', { state: 'killed', labels: { team: 'y' }, createdAt: 3 }));

      assert.deepEqual(
        store.getSandbox('a'),
        sb('a', { labels: { team: 'x', 'odd.key"[0]': 'v' }, createdAt: 1 }),
      );
      assert.equal(store.getSandbox('zzz'), undefined);
      assert.equal(store.getSandboxByName('b')?.id, 'b');

      const ids = (f?: Parameters<SqliteStore['listSandboxes']>[0]) =>
        store.listSandboxes(f).map((s) => s.id);
      assert.deepEqual(ids(), ['a', 'b', 'c']);
      assert.deepEqual(ids({ states: ['running', 'killed'] }), ['b', 'c']);
      assert.deepEqual(ids({ states: [] }), []);
      assert.deepEqual(ids({ labels: { team: 'x' } }), ['a', 'b']);
      assert.deepEqual(ids({ labels: { team: 'x', 'odd.key"[0]': 'v' } }), ['a']);
      assert.deepEqual(ids({ labels: { team: 'x' }, states: ['running'] }), ['b']);
      assert.deepEqual(ids({ labels: { team: 'nope' } }), []);
      assert.deepEqual(ids({ labels: {} }), ['a', 'b', 'c']);
    } finally {
      store.close();
    }
  });

  test('transitions: allowed ones apply the patch and bump updatedAt; refused ones name both states', () => {
    let t = 5000;
    const { store } = fresh(() => t);
    try {
      store.insertSandbox(sb('a'));
      const r = store.transitionSandbox('a', 'running', { hostPid: 4242 });
      assert.equal(r.state, 'running');
      assert.equal(r.hostPid, 4242);
      assert.equal(r.updatedAt, 5000);
      assert.deepEqual(store.getSandbox('a'), r);

      t = 6000;
      const p = store.transitionSandbox('a', 'paused');
      assert.equal(p.updatedAt, 6000);
      assert.equal(p.hostPid, 4242, 'fields not in the patch are kept');

      assert.throws(() => store.transitionSandbox('a', 'creating'), isCode('conflict', /paused.*creating/));
      store.transitionSandbox('a', 'killing');
      store.transitionSandbox('a', 'killed', { endReason: 'killed by user' });
      assert.throws(() => store.transitionSandbox('a', 'running'), isCode('conflict', /killed.*running/));
      assert.equal(store.getSandbox('a')?.state, 'killed', 'a refused transition changes nothing');
      assert.equal(store.getSandbox('a')?.endReason, 'killed by user');

      assert.throws(() => store.transitionSandbox('missing', 'running'), isCode('not_found', /missing/));
    } finally {
      store.close();
    }
  });

  test('updateSandbox keeps state, ignores id/state in the patch; delete cascades to execs', () => {
    const { store } = fresh(() => 9000);
    try {
      store.insertSandbox(sb('a'));
      const patch = {
        labels: { k: 'v' },
        expiresAt: 1234.6,
        id: 'evil',
        state: 'killed',
      } as Partial<SandboxRecord>;
      const u = store.updateSandbox('a', patch);
      assert.equal(u.id, 'a');
      assert.equal(u.state, 'creating');
      assert.equal(store.getSandbox('a')?.expiresAt, 1235, 'fractional stamps are rounded');
      assert.deepEqual(store.getSandbox('a')?.labels, { k: 'v' });
      assert.throws(() => store.updateSandbox('nope', {}), isCode('not_found'));

      store.insertExec(ex('e1', 'a'));
      store.appendExecOutput('e1', { seq: 1, stream: 'stdout', data: Buffer.from('x') }, 100);
      store.deleteSandbox('a');
      assert.equal(store.getSandbox('a'), undefined);
      assert.equal(store.getExec('e1'), undefined);
      assert.deepEqual(store.readExecOutput('e1', 0), []);
    } finally {
      store.close();
    }
  });

  test('partial unique index: one live sandbox per name, ended ones do not count', () => {
    const { store } = fresh();
    try {
      store.insertSandbox(sb('a', { name: 'web', state: 'running' }));
      assert.throws(() => store.insertSandbox(sb('b', { name: 'web' })), isCode('already_exists', /web/));
      store.insertSandbox(sb('c', { name: 'web', state: 'killed', createdAt: 1 }));
      store.transitionSandbox('a', 'killing');
      store.transitionSandbox('a', 'killed');
      store.insertSandbox(sb('d', { name: 'web', createdAt: 2 }));
      assert.equal(store.getSandboxByName('web')?.id, 'd', 'the live one wins');
      // A lost sandbox is not live; bringing it back to 'killing' would collide with 'd'.
      store.insertSandbox(sb('e', { name: 'web', state: 'lost', createdAt: 3 }));
      assert.throws(() => store.transitionSandbox('e', 'killing'), isCode('already_exists'));
      assert.equal(store.getSandbox('e')?.state, 'lost');
    } finally {
      store.close();
    }
  });

  test('namespaces: one live name per namespace, lookups and lists by namespace', () => {
    const { store } = fresh();
    try {
      store.insertSandbox(sb('a', { name: 'web', state: 'running' }));
      store.insertSandbox(sb('b', { name: 'web', state: 'running', namespace: 'prod' }));
      assert.throws(
        () => store.insertSandbox(sb('c', { name: 'web', namespace: 'prod' })),
        isCode('already_exists', /web/),
      );
      store.insertSandbox(sb('d', { name: 'web', state: 'running', tenant: 'alice', namespace: 'prod' }));
      assert.equal(store.getSandboxByName('web')?.id, 'a', "unqualified: the 'default' namespace");
      assert.equal(store.getSandboxByName('web', 'default', 'prod')?.id, 'b');
      assert.equal(store.getSandboxByName('web', 'alice', 'prod')?.id, 'd');
      assert.equal(store.getSandboxByName('web', 'default', 'dev'), undefined);
      const ids = (f: Parameters<SqliteStore['listSandboxes']>[0]) => store.listSandboxes(f).map((r) => r.id);
      assert.deepEqual(ids({ tenant: 'default', namespaces: ['prod'] }), ['b']);
      assert.deepEqual(ids({ tenant: 'default', namespaces: ['default', 'prod'] }), ['a', 'b']);
      assert.deepEqual(ids({ tenant: 'default' }), ['a', 'b'], 'no namespace filter: all of them');
      assert.deepEqual(ids({ tenant: 'default', namespaces: [], states: ['running'] }), []);
      assert.equal(store.getSandbox('b')?.namespace, 'prod');
    } finally {
      store.close();
    }
  });

  test("a version-10 database's sandboxes move into the 'default' namespace", () => {
    const { store, path } = fresh();
    store.insertSandbox(sb('old', { name: 'web', state: 'running' }));
    store.close();
    const raw = new Database(path);
    raw.exec(`DELETE FROM schema_migrations WHERE version >= 11;
      ALTER TABLE snapshots DROP COLUMN ports;
      ALTER TABLE snapshots DROP COLUMN namespace;
      ALTER TABLE template_configs DROP COLUMN pool;
      DROP INDEX sandboxes_live_ns_name; DROP INDEX sandboxes_tenant_ns_name;
      ALTER TABLE sandboxes DROP COLUMN namespace;
      CREATE UNIQUE INDEX sandboxes_live_tenant_name ON sandboxes(tenant, name) WHERE state = 'running';
      CREATE INDEX sandboxes_tenant_name ON sandboxes(tenant, name, created_at);`);
    raw.close();
    const again = openSqliteStore({ path });
    try {
      assert.equal(again.getSandbox('old')?.namespace, 'default');
      assert.equal(again.getSandboxByName('web', 'default', 'default')?.id, 'old');
      again.insertSandbox(sb('new', { name: 'web', state: 'running', namespace: 'other' }));
      assert.throws(() => again.insertSandbox(sb('dup', { name: 'web' })), isCode('already_exists'));
    } finally {
      again.close();
    }
  });

  test("a version-13 database's snapshots move into their source's namespace", () => {
    const { store, path } = fresh();
    store.insertSandbox(sb('src', { namespace: 'prod' }));
    const snap = (id: string, sourceId: string): SnapshotRecord => ({
      id,
      name: id,
      tenant: 'default',
      namespace: 'default',
      sourceId,
      image: 'debian',
      templateId: 't',
      layers: [],
      holderId: null,
      limits: sb(sourceId).limits,
      env: {},
      ports: [],
      createdAt: 1,
    });
    store.insertSnapshot(snap('of-prod', 'src'));
    store.insertSnapshot(snap('source-gone', 'gone'));
    store.close();
    const raw = new Database(path);
    raw.exec(`DELETE FROM schema_migrations WHERE version >= 14;
      ALTER TABLE snapshots DROP COLUMN namespace;`);
    raw.close();
    const again = openSqliteStore({ path });
    try {
      assert.equal(again.getSnapshot('of-prod')?.namespace, 'prod');
      assert.equal(again.getSnapshot('source-gone')?.namespace, 'default');
    } finally {
      again.close();
    }
  });

  test("migration 1's frozen live-state list still matches the domain's LIVE_STATES", () => {
    assert.deepEqual([...MIGRATION_1_LIVE_STATES].sort(), [...LIVE_STATES].sort());
  });

  test('corrupt JSON columns degrade to safe defaults', () => {
    const { store, path } = fresh();
    try {
      store.insertSandbox(sb('a'));
      const raw = new Database(path);
      raw
        .prepare(
          "UPDATE sandboxes SET limits = 'nope', env = '[1]', labels = '{\"a\":1,\"b\":\"ok\"}' WHERE id = 'a'",
        )
        .run();
      raw.close();
      const got = store.getSandbox('a');
      // Corrupt or pre-disk-limit limits: the defaults, and no disk limit (such storage has no quota).
      assert.deepEqual(got?.limits, {
        memoryBytes: 1024 * 1024 * 1024,
        pids: 512,
        cpus: 1,
        diskBytes: 0,
        diskInodes: 0,
      });
      assert.deepEqual(got?.env, {});
      assert.deepEqual(got?.labels, { b: 'ok' });
    } finally {
      store.close();
    }
  });
});

describe('sqlite store: batches and pid-namespace holders', () => {
  test('atomically commits every write of the batch, or none when it throws', () => {
    const { store } = fresh();
    try {
      store.atomically(() => {
        store.insertSandbox(sb('a'));
        store.insertSandbox(sb('b'));
        store.transitionSandbox('a', 'running');
      });
      assert.deepEqual(
        store.listSandboxes().map((r) => [r.id, r.state]),
        [
          ['a', 'running'],
          ['b', 'creating'],
        ],
      );
      assert.throws(
        () =>
          store.atomically(() => {
            store.insertSandbox(sb('c'));
            store.transitionSandbox('b', 'killed'); // creating -> killed is not a transition: throws
          }),
        ForkboxError,
      );
      assert.equal(store.getSandbox('c'), undefined, 'the insert before the failure was rolled back');
      assert.equal(store.getSandbox('b')?.state, 'creating');
    } finally {
      store.close();
    }
  });

  test('listPidNamespaceHolders: live sandboxes and tombstones, not the ended history', () => {
    const { store } = fresh();
    try {
      store.insertSandbox(sb('live'));
      store.transitionSandbox('live', 'running', { hostPid: 10 });
      for (const id of ['tomb', 'gone']) {
        store.insertSandbox(sb(id));
        store.transitionSandbox(id, 'running', { hostPid: 11 });
        store.transitionSandbox(id, 'killing');
      }
      // A tombstone keeps its host pid (its PID 1 waits for descendants); an ended sandbox drops it.
      store.transitionSandbox('tomb', 'killed', { runtime: { tombstone: true } });
      store.transitionSandbox('gone', 'killed', { hostPid: null });
      store.insertSandbox(sb('failed'));
      store.transitionSandbox('failed', 'failed');
      assert.deepEqual(
        store
          .listPidNamespaceHolders()
          .map((r) => r.id)
          .sort(),
        ['live', 'tomb'],
      );
    } finally {
      store.close();
    }
  });
});

describe('sqlite store: file, durability, migrations', () => {
  test('creates its directory and a 0600 file; pragmas are set', () => {
    const { store, path } = fresh();
    try {
      assert.equal(statSync(path).mode & 0o777, 0o600);
      store.insertSandbox(sb('a')); // creates the -wal file
      assert.equal(statSync(`${path}-wal`).mode & 0o777, 0o600);
      const raw = new Database(path, { readonly: true });
      assert.equal(raw.pragma('journal_mode', { simple: true }), 'wal');
      raw.close();
    } finally {
      store.close();
    }
  });

  test('data survives close and reopen; schema_migrations shows the version', () => {
    const { store, path } = fresh();
    store.insertSandbox(sb('a', { labels: { l: '1' } }));
    store.transitionSandbox('a', 'running');
    store.insertTemplate({
      id: 't1',
      image: 'debian',
      configKey: 'k',
      state: 'running',
      hostPid: 7,
      createdAt: 1,
      runtime: {},
    });
    store.insertExec(ex('e1', 'a', { idempotencyKey: 'key-1' }));
    store.appendExecOutput('e1', { seq: 1, stream: 'stderr', data: Buffer.from([0, 1, 2, 255]) }, 1024);
    store.insertLayer({
      id: 'L1',
      path: '/layers/L1',
      kind: 'image',
      parentId: null,
      refcount: 1,
      createdAt: 5,
    });
    const before = store.getSandbox('a');
    store.close();
    store.close(); // idempotent

    const again = openSqliteStore({ path });
    try {
      assert.equal(again.schemaVersion, LATEST_SCHEMA_VERSION);
      assert.deepEqual(again.getSandbox('a'), before);
      assert.equal(again.getTemplate('t1')?.hostPid, 7);
      assert.equal(again.findExecByIdempotencyKey('a', 'key-1')?.id, 'e1');
      assert.deepEqual(again.readExecOutput('e1', 0), [
        { seq: 1, stream: 'stderr', data: Buffer.from([0, 1, 2, 255]) },
      ]);
      assert.equal(again.getLayer('L1')?.refcount, 1);
    } finally {
      again.close();
    }
    const raw = new Database(path, { readonly: true });
    const rows = raw.prepare('SELECT version, applied_at FROM schema_migrations ORDER BY version').all() as {
      version: number;
      applied_at: number;
    }[];
    raw.close();
    assert.deepEqual(
      rows.map((r) => r.version),
      Array.from({ length: LATEST_SCHEMA_VERSION }, (_, i) => i + 1),
    );
    assert.ok(
      rows.every((r) => r.applied_at > 1_600_000_000_000),
      'applied_at is epoch ms',
    );
  });

  test('a database from a newer forkbox is refused with an upgrade hint', () => {
    const { store, path } = fresh();
    store.close();
    const raw = new Database(path);
    raw
      .prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)')
      .run(LATEST_SCHEMA_VERSION + 1, 1);
    raw.close();
    assert.throws(() => openSqliteStore({ path }), isCode('conflict', /upgrade forkbox/));
  });

  test('a file that is not a database gives an actionable error', () => {
    const path = join(dir, 'garbage.db');
    writeFileSync(path, 'this is not sqlite, just some bytes '.repeat(200));
    assert.throws(() => openSqliteStore({ path }), isCode('unavailable', /not a valid SQLite database/));
  });

  test('a second connection to the same file reads committed data (WAL)', () => {
    const { store: a, path } = fresh();
    const b = openSqliteStore({ path });
    try {
      a.insertSandbox(sb('x'));
      assert.equal(b.getSandbox('x')?.id, 'x');
      b.transitionSandbox('x', 'running');
      assert.equal(a.getSandbox('x')?.state, 'running');
      // A reader holding an open read transaction does not block the writer, and keeps its snapshot.
      const raw = new Database(path, { readonly: true });
      const snap = raw.transaction(() => {
        const first = raw.prepare("SELECT state FROM sandboxes WHERE id = 'x'").pluck().get();
        a.transitionSandbox('x', 'paused');
        const second = raw.prepare("SELECT state FROM sandboxes WHERE id = 'x'").pluck().get();
        return [first, second];
      })();
      raw.close();
      assert.deepEqual(snap, ['running', 'running']);
      assert.equal(b.getSandbox('x')?.state, 'paused');
    } finally {
      a.close();
      b.close();
    }
  });
});

describe('sqlite store: execs', () => {
  function withSandbox(): SqliteStore {
    const { store } = fresh(() => 7777);
    store.insertSandbox(sb('s1', { state: 'running' }));
    return store;
  }

  test('output: append, read after a seq, and the byte cap drops the oldest chunks', () => {
    const store = withSandbox();
    try {
      store.insertExec(ex('e1', 's1'));
      const chunk = (seq: number, s: string, stream: 'stdout' | 'stderr' = 'stdout') => ({
        seq,
        stream,
        data: Buffer.from(s),
      });
      const seqs = (after = 0) => store.readExecOutput('e1', after).map((c) => c.seq);
      store.appendExecOutput('e1', chunk(1, 'aaaa'), 10);
      store.appendExecOutput('e1', chunk(2, 'bbbb', 'stderr'), 10);
      assert.deepEqual(seqs(), [1, 2]);
      assert.deepEqual(store.readExecOutput('e1', 1), [chunk(2, 'bbbb', 'stderr')]);
      assert.equal(store.getExec('e1')?.truncated, false);

      store.appendExecOutput('e1', chunk(3, 'cccc'), 10); // 12 > 10: chunk 1 goes
      assert.deepEqual(seqs(), [2, 3]);
      assert.equal(store.getExec('e1')?.truncated, true, 'dropping output marks the exec truncated');
      store.appendExecOutput('e1', chunk(4, 'dddddddd'), 10); // 16 > 10: 2 and 3 go
      assert.deepEqual(seqs(), [4]);
      // A chunk bigger than the cap keeps its tail.
      store.appendExecOutput('e1', chunk(5, '0123456789ABCDEF'), 10);
      assert.deepEqual(store.readExecOutput('e1', 0), [chunk(5, '6789ABCDEF')]);
      assert.deepEqual(seqs(5), []);

      assert.throws(() => store.appendExecOutput('e1', chunk(5, 'x'), 10), isCode('already_exists'));
      assert.throws(() => store.appendExecOutput('nope', chunk(1, 'x'), 10), isCode('not_found', /nope/));
    } finally {
      store.close();
    }
  });

  test('idempotency keys: lookup per sandbox, duplicates refused, nulls unconstrained', () => {
    const store = withSandbox();
    try {
      store.insertSandbox(sb('s2', { state: 'running' }));
      store.insertExec(ex('e1', 's1', { idempotencyKey: 'k' }));
      store.insertExec(ex('e2', 's2', { idempotencyKey: 'k' }));
      store.insertExec(ex('e3', 's1'));
      store.insertExec(ex('e4', 's1'));
      assert.equal(store.findExecByIdempotencyKey('s1', 'k')?.id, 'e1');
      assert.equal(store.findExecByIdempotencyKey('s2', 'k')?.id, 'e2');
      assert.equal(store.findExecByIdempotencyKey('s1', 'other'), undefined);
      assert.throws(
        () => store.insertExec(ex('e5', 's1', { idempotencyKey: 'k' })),
        isCode('already_exists'),
      );
      assert.throws(() => store.insertExec(ex('e6', 'no-such-sandbox')), isCode('conflict'));
    } finally {
      store.close();
    }
  });

  test('listExecs (newest first, limit), updateExec, markRunningExecs', () => {
    const store = withSandbox();
    try {
      store.insertExec(ex('e1', 's1', { startedAt: 1 }));
      store.insertExec(ex('e2', 's1', { startedAt: 2 }));
      store.insertExec(ex('e3', 's1', { startedAt: 3, state: 'exited', exitCode: 0, endedAt: 4 }));
      assert.deepEqual(
        store.listExecs('s1').map((e) => e.id),
        ['e3', 'e2', 'e1'],
      );
      assert.deepEqual(
        store.listExecs('s1', 2).map((e) => e.id),
        ['e3', 'e2'],
      );

      const u = store.updateExec('e2', { state: 'killed', signal: 9, oomKilled: true, endedAt: 50 });
      assert.deepEqual(store.getExec('e2'), u);
      assert.equal(u.oomKilled, true);
      assert.deepEqual(u.command, ['sh', '-c', 'echo hi']);
      assert.throws(() => store.updateExec('nope', {}), isCode('not_found'));

      assert.equal(store.markRunningExecs('interrupted'), 1);
      const e1 = store.getExec('e1');
      assert.equal(e1?.state, 'interrupted');
      assert.equal(e1?.endedAt, 7777);
      assert.equal(store.getExec('e3')?.state, 'exited', 'finished execs are untouched');
      assert.equal(store.getExec('e3')?.endedAt, 4);
      assert.equal(store.markRunningExecs('interrupted'), 0);
    } finally {
      store.close();
    }
  });
});

describe('sqlite store: templates and layers', () => {
  test('templates: find by config key prefers a usable one; update; delete', () => {
    const { store } = fresh();
    try {
      const base = { image: 'debian', configKey: 'ck', hostPid: null, runtime: {} };
      store.insertTemplate({ ...base, id: 't1', state: 'stopped', createdAt: 3 });
      store.insertTemplate({ ...base, id: 't2', state: 'running', createdAt: 1 });
      assert.equal(store.findTemplateByConfigKey('ck')?.id, 't2');
      assert.equal(store.findTemplateByConfigKey('other'), undefined);
      const u = store.updateTemplate('t2', { state: 'failed', runtime: { why: 'oom' } });
      assert.deepEqual(store.getTemplate('t2'), u);
      assert.equal(store.findTemplateByConfigKey('ck')?.id, 't1', 'then the newest');
      assert.deepEqual(
        store.listTemplates().map((t) => t.id),
        ['t2', 't1'],
      );
      store.deleteTemplate('t1');
      assert.equal(store.getTemplate('t1'), undefined);
      assert.throws(() => store.updateTemplate('t1', {}), isCode('not_found'));
    } finally {
      store.close();
    }
  });

  test('layers: refcounts never go negative; parents cannot be deleted under children', () => {
    const { store } = fresh();
    try {
      store.insertLayer({
        id: 'base',
        path: '/l/base',
        kind: 'image',
        parentId: null,
        refcount: 0,
        createdAt: 1,
      });
      store.insertLayer({
        id: 'snap',
        path: '/l/snap',
        kind: 'snapshot',
        parentId: 'base',
        refcount: 0,
        createdAt: 2,
      });
      assert.throws(
        () =>
          store.insertLayer({
            id: 'x',
            path: '/l/x',
            kind: 'upper',
            parentId: 'nope',
            refcount: 0,
            createdAt: 3,
          }),
        isCode('conflict'),
      );
      assert.equal(store.adjustLayerRefcount('snap', 2), 2);
      assert.equal(store.adjustLayerRefcount('snap', -1), 1);
      assert.throws(() => store.adjustLayerRefcount('snap', -2), isCode('internal', /below zero/));
      assert.equal(store.getLayer('snap')?.refcount, 1);
      assert.throws(() => store.adjustLayerRefcount('nope', 1), isCode('not_found'));

      assert.deepEqual(
        store.listLayers({ unreferenced: true }).map((l) => l.id),
        ['base'],
      );
      assert.deepEqual(
        store.listLayers({ kind: 'snapshot' }).map((l) => l.id),
        ['snap'],
      );
      assert.throws(() => store.deleteLayer('base'), isCode('conflict'));
      store.deleteLayer('snap');
      store.deleteLayer('base');
      assert.deepEqual(store.listLayers(), []);
    } finally {
      store.close();
    }
  });
});
