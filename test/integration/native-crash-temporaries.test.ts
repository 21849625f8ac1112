/**
 * A crash leaves nothing that grows: `kill -9` of the daemon during an image import left its work dir
 * (1.5 GiB) in `<state>/tmp`, which neither the restart nor `gc` removed. Every kind of temporary a crash
 * can leave is swept at the daemon's start and by `gc`, and nothing of a call in flight is:
 * - tmp/img-<pid>-<hex>: the work dir of an image build, import or pull, or a layer being deleted;
 * - images/.<name>.<hex>.tmp: an image record written but not yet renamed into place;
 * - <layers>/s-<hex>.tmp: a snapshot's or fork's layer half copied by the copy driver (or by btrfs's copy
 *   of an upper it did not make).
 * Upload temps (`.forkbox-upload-*`) live in the sandbox's own filesystem, under its disk limit, and go
 * with it; `forkbox cp` writes no temporary on the daemon's side.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createDaemonClient, type DaemonClient } from '../../src/transports/daemon-client.ts';
import { waitFor } from '../helpers/abuse.ts';
import { killableDaemon } from '../helpers/killable-daemon.ts';
import { nativeUnavailable } from '../helpers/native.ts';

const skip = nativeUnavailable();

/** The pid of a process that has exited (nothing of it is alive to own a temp dir). */
function deadPid(): number {
  const r = spawnSync('sh', ['-c', 'echo $$'], { encoding: 'utf8' });
  return Number(r.stdout.trim());
}

describe('a crash leaves no temporary behind', { skip: skip ?? false }, () => {
  const d = killableDaemon();
  let tarball = '';
  const tmpDir = () => join(d.stateDir, 'tmp');
  const layersDir = () =>
    existsSync(join(d.stateDir, 'btrfs', 'layers'))
      ? join(d.stateDir, 'btrfs', 'layers')
      : join(d.stateDir, 'layers');
  const entries = (dir: string) => (existsSync(dir) ? readdirSync(dir) : []);
  /** Host administration (import, gc) is served on the local socket only. */
  const clients: DaemonClient[] = [];
  const host = () => {
    const c = createDaemonClient({ socketPath: join(d.stateDir, 'forkbox.sock') });
    clients.push(c);
    return c;
  };

  before(() => {
    // A rootfs tarball big enough that its extraction is under way for a while: 768 MiB of one file.
    const src = join(d.stateDir, 'import-src');
    mkdirSync(join(src, 'usr/bin'), { recursive: true });
    spawnSync('truncate', ['-s', '768M', join(src, 'usr/bin/big')]);
    tarball = join(d.stateDir, 'rootfs.tar');
    const t = spawnSync('tar', ['-cf', tarball, '-C', src, '.'], { encoding: 'utf8' });
    assert.equal(t.status, 0, t.stderr);
    rmSync(src, { recursive: true, force: true });
  });
  after(() => {
    for (const c of clients) c.close();
    rmSync(tarball, { force: true });
  });

  it('kill -9 during an image import: the restart removes its work dir', async () => {
    const imp = host()
      .importImage('crashy', tarball)
      .catch(() => undefined);
    // The work dir exists once the tarball is hashed; wait until the extraction has written into it.
    const dir = await waitFor('the import writing its work dir', 60_000, () => {
      for (const n of entries(tmpDir())) {
        const big = join(tmpDir(), n, 'rootfs/usr/bin/big');
        if (existsSync(big) && statSync(big).size > 0) return join(tmpDir(), n);
      }
      return undefined;
    });
    await d.kill();
    void imp;
    assert.ok(existsSync(dir), 'the crash left the import’s work dir');
    await d.restart();
    await waitFor('the work dir removed at start', 30_000, () => (existsSync(dir) ? undefined : true));
    assert.deepEqual(entries(tmpDir()), []);
    assert.equal(
      (await d.api.listImages()).find((i) => i.name === 'crashy'),
      undefined,
      'no half image',
    );
  });

  /** One leftover of each kind, named as the daemon names them, owned by a process that is gone. */
  function plant(): string[] {
    const pid = deadPid();
    const work = join(tmpDir(), `img-${pid}-0123456789ab`);
    mkdirSync(join(work, 'rootfs/etc'), { recursive: true });
    writeFileSync(join(work, 'rootfs/etc/hostname'), 'left\n');
    const doomed = join(tmpDir(), `img-${pid}-ba9876543210`);
    mkdirSync(doomed);
    const record = join(d.stateDir, 'images', '.crashy.0a1b2c3d.tmp');
    writeFileSync(record, '{"name":"crashy"');
    const layer = join(layersDir(), 's-0a1b2c3d4e.tmp');
    mkdirSync(join(layer, 'upper'), { recursive: true });
    writeFileSync(join(layer, 'upper/half'), 'x'.repeat(4096));
    return [work, doomed, record, layer];
  }

  it('each kind is removed at start', async () => {
    await d.kill();
    const left = plant();
    await d.restart();
    await waitFor('the leftovers removed at start', 30_000, () =>
      left.some((p) => existsSync(p)) ? undefined : true,
    ).catch(() => undefined);
    for (const p of left) assert.equal(existsSync(p), false, `${p} is still there after a restart`);
  });

  it('each kind is removed by gc, and a sandbox’s snapshot still works', async () => {
    const left = plant();
    const report = await host().gc();
    for (const p of left) {
      assert.equal(existsSync(p), false, `${p} is still there after gc`);
      assert.ok(report.removedDirs.includes(p), `gc reports ${p}: ${JSON.stringify(report.removedDirs)}`);
    }
    const sb = await d.api.createSandbox({});
    await d.api.writeFile(sb.id, '/tmp/kept.txt', Buffer.from('kept'));
    const snap = await d.api.createSnapshot(sb.id, {});
    const r = await d.api.restoreSnapshot(snap.id, { n: 1 });
    const child = r.children[0]?.sandbox?.id;
    assert.ok(child, JSON.stringify(r));
    assert.equal((await d.api.readFile(child, '/tmp/kept.txt')).data.toString(), 'kept');
    await d.api.deleteSnapshot(snap.id, { cascade: true });
    await d.api.killSandbox(sb.id);
  });
});
