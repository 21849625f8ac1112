/**
 * The database keeps room for itself on a full disk (issue 22 item 5: `kill` failed with "the disk … is
 * full" and nothing could be freed). On a small tmpfs filled to the last byte, writes succeed through the
 * reserve beside the database; without one the same writes are refused; the reserve comes back when there
 * is room again.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openSqliteStore } from '../../src/storage/sqlite/index.ts';
import { sandboxRecord } from '../helpers/sandbox-record.ts';

const MiB = 1024 * 1024;
const skip = process.getuid?.() === 0 ? false : 'mounting a small tmpfs needs root';

/** A running sandbox's record with 64 KiB of labels: each one takes real pages. */
const record = (id: string) =>
  sandboxRecord(id, { state: 'running', labels: { pad: 'x'.repeat(64 * 1024) } });

/** Write a file until the filesystem refuses. */
function fill(path: string): void {
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(MiB, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
  } finally {
    closeSync(fd);
  }
  // The last, partial chunk: byte by byte is too slow, so halve the size down to 1.
  for (let size = MiB / 2; size >= 1; size = Math.floor(size / 2)) {
    const f = openSync(path, 'a');
    try {
      for (;;) writeSync(f, Buffer.alloc(size, 1));
    } catch {
      // full at this size
    } finally {
      closeSync(f);
    }
  }
}

describe('the database on a full disk', { skip }, () => {
  let base = '';
  const mounts: string[] = [];
  const tmpfs = (name: string) => {
    const dir = join(base, name);
    mkdirSync(dir);
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=48m,mode=0700', 'forkbox-test', dir], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    mounts.push(dir);
    return dir;
  };
  before(() => {
    mkdirSync('/var/tmp/forkbox-tests', { recursive: true });
    base = mkdtempSync('/var/tmp/forkbox-tests/sqlite-full-');
  });
  after(() => {
    for (const m of mounts) spawnSync('umount', [m]);
    rmSync(base, { recursive: true, force: true });
  });

  it('writes through the reserve when the disk is full, and makes it again when there is room', () => {
    const dir = tmpfs('with');
    const warned: string[] = [];
    const store = openSqliteStore({
      path: join(dir, 'forkbox.db'),
      reserveBytes: 16 * MiB,
      onReserveReleased: () => warned.push('released'),
    });
    try {
      assert.ok(existsSync(join(dir, 'db-reserve')), 'the reserve is made at open');
      fill(join(dir, 'filler'));
      for (let i = 0; i < 100; i++) store.insertSandbox(record(`sb-${i}`));
      assert.equal(store.listSandboxes({}).length, 100);
      assert.deepEqual(warned, ['released'], 'the reserve was used, once');
      assert.equal(existsSync(join(dir, 'db-reserve')), false);
      // Not while the disk is still full…
      assert.equal(store.ensureDiskReserve(), false);
      rmSync(join(dir, 'filler'));
      // …but once it has room.
      assert.equal(store.ensureDiskReserve(), true);
      assert.ok(existsSync(join(dir, 'db-reserve')));
    } finally {
      store.close();
    }
  });

  it('without a reserve, the same writes are refused with what to do', () => {
    const dir = tmpfs('without');
    const store = openSqliteStore({ path: join(dir, 'forkbox.db'), reserveBytes: 0 });
    try {
      fill(join(dir, 'filler'));
      assert.throws(
        () => {
          for (let i = 0; i < 100; i++) store.insertSandbox(record(`sb-${i}`));
        },
        { code: 'resource_exhausted', message: /disk holding the forkbox database is full/ },
      );
    } finally {
      store.close();
    }
  });
});
