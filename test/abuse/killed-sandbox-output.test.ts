/**
 * Attack: fill the host's database through a sandbox's exec output, then get the sandbox killed, so the
 * output outlives it (issue #11 item 7: 1 GB of exec output stayed in forkbox.db after the sandbox was
 * killed, and 8,093 ended sandboxes, never pruned, slowed every status call). Precedent: Docker's
 * json-file log driver keeping a container's logs without bound until `max-size` was added, and dead
 * containers piling up without `--rm`.
 *
 * Contained when the killed sandbox's output leaves the database right after the kill (the file's pages
 * are given back too), its record and execs go once the retention time has passed, and a live sandbox
 * keeps its own output and keeps working.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import type { ForkboxApi } from '../../src/service/api.ts';
import { until } from '../helpers/exec-probe.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const MiB = 1024 * 1024;
/** Printed per exec; eight execs in the killed sandbox. */
const OUTPUT = 16 * MiB;

/** Poll `check` until it holds; fail naming `what` past the deadline (a bound on waiting, not a timing). */
const waitFor = (what: string, check: () => boolean, deadlineMs = 120_000) => until(what, check, deadlineMs);

describe('exec output of a killed sandbox in forkbox.db', () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let db: Database.Database;
  const outputBytes = (sandboxId: string) =>
    (
      db
        .prepare(
          `SELECT COALESCE(SUM(LENGTH(o.data)), 0) AS n FROM exec_output AS o
           JOIN execs AS e ON e.id = o.exec_id WHERE e.sandbox_id = ?`,
        )
        .get(sandboxId) as { n: number }
    ).n;
  const row = (id: string) => db.prepare('SELECT state FROM sandboxes WHERE id = ?').get(id);
  const execRows = (id: string) =>
    (db.prepare('SELECT COUNT(*) AS n FROM execs WHERE sandbox_id = ?').get(id) as { n: number }).n;
  const usedBytes = () =>
    ((db.pragma('page_count', { simple: true }) as number) -
      (db.pragma('freelist_count', { simple: true }) as number)) *
    (db.pragma('page_size', { simple: true }) as number);
  const fileBytes = () =>
    (db.pragma('page_count', { simple: true }) as number) *
    (db.pragma('page_size', { simple: true }) as number);

  before(async () => {
    const why = nativeUnavailable();
    if (why) throw new Error(`this test needs the native runtime: ${why}`);
    // Retention 8 s: long enough to see the ended sandbox still listed, short enough to see it pruned.
    fx = await openNative({ retentionSeconds: 8, retentionSweepMs: 200 });
    api = fx.opened.api;
    db = new Database(join(fx.stateDir, 'forkbox.db'), { readonly: true });
  });
  after(async () => {
    db?.close();
    await fx?.close();
  });

  async function flood(id: string, bytes: number): Promise<void> {
    const ex = await api.startExec(id, {
      cmd: `head -c ${bytes} /dev/zero | tr "\\0" x`,
      maxOutputBytes: bytes,
    });
    await waitFor(`exec ${ex.id} ended`, () => {
      const r = db.prepare('SELECT state FROM execs WHERE id = ?').get(ex.id) as { state: string };
      return r.state !== 'running';
    });
  }

  it('drops its output at the kill, prunes it after the retention time, and leaves a live one alone', async () => {
    const doomed = await api.createSandbox({});
    const alive = await api.createSandbox({});
    // What the store keeps of each exec is bounded (head and tail per stream): many execs fill it.
    for (let i = 0; i < 8; i++) await flood(doomed.id, OUTPUT);
    await flood(alive.id, MiB);
    const stored = outputBytes(doomed.id);
    const aliveStored = outputBytes(alive.id);
    assert.ok(stored >= 4 * MiB, `the output is stored while the sandbox lives: ${stored} bytes`);
    assert.ok(aliveStored > 0, 'the live sandbox output is stored');
    const fileBefore = fileBytes();
    assert.ok(fileBefore > stored, `database file ${fileBefore} bytes`);

    await api.killSandbox(doomed.id);
    await waitFor('the killed sandbox output dropped', () => outputBytes(doomed.id) === 0);
    await waitFor('its pages given back', () => fileBytes() < fileBefore - stored / 2);
    assert.ok(usedBytes() < fileBefore - stored / 2, `pages in use after the drop: ${usedBytes()}`);
    // Still listed, with its exec records, until the retention time has passed.
    assert.ok(
      (await api.listSandboxes({ all: true })).some((s) => s.id === doomed.id),
      'listed',
    );
    assert.equal(execRows(doomed.id), 8);

    await waitFor('the killed sandbox pruned', () => row(doomed.id) === undefined);
    assert.equal(execRows(doomed.id), 0, 'its execs go with it');
    assert.equal(
      (await api.listSandboxes({ all: true })).some((s) => s.id === doomed.id),
      false,
    );
    assert.equal((await api.status()).sandboxes.killed ?? 0, 0);

    // The live one keeps its output and works.
    assert.equal(outputBytes(alive.id), aliveStored);
    assert.equal((await api.getSandbox(alive.id)).state, 'running');
    assert.equal((await api.exec(alive.id, { argv: ['echo', 'still here'] })).stdout, 'still here\n');
  });
});
