/**
 * The btrfs storage driver against a real loopback btrfs: subvolume per sandbox, O(1) read-only snapshots
 * that carry unflushed writes, overlay renames inside one subvolume, re-attaching an existing loop
 * device, ENOSPC naming FORKBOX_BTRFS_SIZE, and a fork through the engine that leaves nothing behind.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ForkboxError } from '../../src/domain/errors.ts';
import { createMounts, mountsUnder } from '../../src/runtimes/native/host/mounts.ts';
import { createSys } from '../../src/runtimes/native/host/sys.ts';
import { createBtrfsDriver } from '../../src/runtimes/native/layers/btrfs-driver.ts';
import { isOnBtrfs, isSubvolume } from '../../src/runtimes/native/layers/btrfs-ioctl.ts';
import { loopbackMissing, planStorage } from '../../src/runtimes/native/layers/btrfs-storage.ts';
import { openBtrfsVolume, parseBtrfsSize } from '../../src/runtimes/native/layers/btrfs-volume.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const noBtrfs = process.getuid?.() !== 0 ? 'needs root (loop devices and mounts)' : loopbackMissing();
const sys = createSys();
const mounts = createMounts(sys);

function loopsOf(image: string): string[] {
  const r = spawnSync('losetup', ['-j', image], { encoding: 'utf8' });
  return r.stdout
    .split('\n')
    .filter((l) => l.includes(':'))
    .map((l) => l.slice(0, l.indexOf(':')));
}

function tempState(): string {
  mkdirSync('/var/tmp/forkbox-tests', { recursive: true });
  return mkdtempSync('/var/tmp/forkbox-tests/btrfs-');
}

describe('btrfs volume and driver', { skip: noBtrfs ?? false }, () => {
  let state: string;
  before(() => {
    state = tempState();
  });
  after(() => {
    for (const m of mountsUnder(state)) mounts.detach(m);
    for (const d of loopsOf(join(state, 'btrfs.img'))) spawnSync('losetup', ['-d', d]);
    rmSync(state, { recursive: true, force: true });
  });

  it('parses FORKBOX_BTRFS_SIZE and refuses nonsense', () => {
    assert.equal(parseBtrfsSize(undefined), 64 * 1024 ** 3);
    assert.equal(parseBtrfsSize('2G'), 2 * 1024 ** 3);
    assert.equal(parseBtrfsSize('1.5GiB'), 1.5 * 1024 ** 3);
    assert.equal(parseBtrfsSize('1t'), 1024 ** 4);
    assert.throws(() => parseBtrfsSize('lots'), /FORKBOX_BTRFS_SIZE="lots" is not a size/);
    assert.throws(() => parseBtrfsSize('100M'), /under 1 GiB/);
  });

  it('plans btrfs on a loopback image here, and copy when asked', () => {
    const p = planStorage(state, { FORKBOX_STORAGE: 'auto' });
    assert.equal(p.driver, 'btrfs');
    assert.equal(p.loopback, true);
    assert.equal(planStorage(state, { FORKBOX_STORAGE: 'copy' }).driver, 'copy');
    assert.throws(() => planStorage(state, { FORKBOX_STORAGE: 'zfs' }), /not a storage driver/);
  });

  it('makes sandbox subvolumes, freezes them into read-only snapshots, removes both', async () => {
    const vol = openBtrfsVolume({ stateDir: state, sys, mounts, sizeText: '2G' });
    assert.ok(vol.loop);
    assert.ok(isOnBtrfs(join(state, 'sandboxes')), 'sandboxes dir is bound from the btrfs volume');
    const drv = createBtrfsDriver(vol);
    const dir = join(vol.sandboxesDir, 'sb-one');
    const { upper } = await drv.createSandboxDir(dir);
    assert.equal(isSubvolume(dir), true);
    assert.deepEqual(readdirSync(dir).sort(), ['upper', 'work']);
    // Written and not synced: the snapshot must still hold it (btrfs flushes delalloc before snapshotting).
    const data = Buffer.alloc(8 * 1024 * 1024, 0x5a);
    writeFileSync(join(upper, 'big.bin'), data);
    writeFileSync(join(upper, 'small.txt'), 'hello');
    const layer = await drv.freeze(upper);
    assert.equal(layer, join(vol.layersDir, layer.split('/').at(-2) ?? '', 'upper'));
    assert.ok(readFileSync(join(layer, 'big.bin')).equals(data));
    assert.equal(readFileSync(join(layer, 'small.txt'), 'utf8'), 'hello');
    assert.throws(() => writeFileSync(join(layer, 'x'), 'no'), /EROFS/);
    assert.deepEqual(await drv.list(), [layer]);
    // The source keeps changing after the freeze; the layer does not.
    writeFileSync(join(upper, 'small.txt'), 'changed');
    assert.equal(readFileSync(join(layer, 'small.txt'), 'utf8'), 'hello');

    // An overlay over the layer with a child's fresh subvolume: a rename copies up through `work`, which
    // fails with EXDEV if upper and work were in different subvolumes.
    const child = await drv.createSandboxDir(join(vol.sandboxesDir, 'sb-two'));
    const mnt = join(state, 'mnt');
    mkdirSync(mnt);
    mounts.overlay(mnt, [layer], child.upper, child.work);
    try {
      renameSync(join(mnt, 'small.txt'), join(mnt, 'renamed.txt'));
      rmSync(join(mnt, 'big.bin'));
      assert.deepEqual(readdirSync(mnt).sort(), ['renamed.txt']);
      assert.deepEqual(readdirSync(layer).sort(), ['big.bin', 'small.txt'], 'the layer is untouched');
    } finally {
      mounts.detach(mnt);
    }
    await drv.remove(layer);
    await drv.removeSandboxDir(dir);
    await drv.removeSandboxDir(join(vol.sandboxesDir, 'sb-two'));
    await drv.removeSandboxDir(join(vol.sandboxesDir, 'not-there'));
    assert.deepEqual(await drv.list(), []);
    assert.deepEqual(readdirSync(vol.sandboxesDir), []);
  });

  it('re-attaches the loop device already bound to the image, and detaches cleanly', async () => {
    const img = join(state, 'btrfs.img');
    const before = loopsOf(img);
    assert.equal(before.length, 1);
    // A restart while everything is still mounted.
    const again = openBtrfsVolume({ stateDir: state, sys, mounts, sizeText: '2G' });
    assert.equal(again.loop?.device, before[0]);
    // A restart after the mounts went away but the loop device stayed.
    for (const m of mountsUnder(state)) mounts.detach(m);
    const third = openBtrfsVolume({ stateDir: state, sys, mounts });
    assert.equal(third.loop?.device, before[0]);
    assert.deepEqual(loopsOf(img), before, 'no second loop device for the same image');
    assert.equal(third.loop?.sizeBytes, 2 * 1024 ** 3, 'no size given: the image keeps its size');
    third.detach();
    assert.deepEqual(mountsUnder(state), []);
    assert.deepEqual(loopsOf(img), []);
  });

  it('says which setting to raise when the storage is full', async () => {
    const small = join(state, 'small');
    mkdirSync(small);
    const vol = openBtrfsVolume({ stateDir: small, sys, mounts, sizeText: '1G' });
    try {
      const drv = createBtrfsDriver(vol);
      // Fill the filesystem quickly with preallocated space.
      spawnSync('fallocate', ['-l', `${1024 ** 3}`, join(vol.layersDir, '..', 'filler')]);
      const plain = join(state, 'plain-upper');
      mkdirSync(plain, { recursive: true });
      writeFileSync(join(plain, 'f'), Buffer.alloc(64 * 1024 * 1024, 1));
      // A non-subvolume upper is copied into the layer: the copy hits ENOSPC.
      await assert.rejects(
        drv.freeze(join(plain)),
        (e: ForkboxError) =>
          e.code === 'resource_exhausted' && /FORKBOX_BTRFS_SIZE/.test(e.message) && /2G/.test(e.message),
      );
      assert.deepEqual(await drv.list(), [], 'no half-made layer');
    } finally {
      vol.detach();
    }
    assert.deepEqual(loopsOf(join(small, 'btrfs.img')), []);
  });
});

describe('forking on the btrfs driver through the engine', {
  skip: noBtrfs ?? nativeUnavailable() ?? false,
}, () => {
  let fx: NativeFixture;
  const saved = process.env.FORKBOX_STORAGE;
  before(async () => {
    process.env.FORKBOX_STORAGE = 'btrfs';
    fx = await openNative();
  });
  after(async () => {
    if (saved === undefined) delete process.env.FORKBOX_STORAGE;
    else process.env.FORKBOX_STORAGE = saved;
    const img = join(fx.stateDir, 'btrfs.img');
    await fx?.close();
    assert.deepEqual(loopsOf(img), [], 'the loop device is released');
  });

  it('snapshots the source into a read-only layer that children see, writes just before included', async () => {
    const { api } = fx.opened;
    const src = (await api.createSandbox({ memoryMb: 256 })).id;
    assert.equal(isSubvolume(join(fx.stateDir, 'sandboxes', src)), true);
    const w = await api.exec(src, {
      cmd: 'head -c 30000000 /dev/urandom > /root/blob && sha256sum /root/blob | cut -d" " -f1',
    });
    const sum = w.stdout.trim();
    const r = await api.forkSandbox(src, { n: 2, memoryMb: 128 });
    assert.equal(r.driver, 'btrfs');
    assert.ok(r.children.every((c) => c.ok));
    const layers = readdirSync(join(fx.stateDir, 'btrfs', 'layers'));
    assert.equal(layers.length, 1);
    assert.equal(isSubvolume(join(fx.stateDir, 'btrfs', 'layers', layers[0] ?? '')), true);
    for (const c of r.children) {
      const id = c.sandbox?.id ?? '';
      assert.equal(isSubvolume(join(fx.stateDir, 'sandboxes', id)), true);
      assert.equal((await api.exec(id, { cmd: 'sha256sum /root/blob | cut -d" " -f1' })).stdout.trim(), sum);
      assert.equal((await api.exec(id, { cmd: 'mv /root/blob /root/moved && echo ok' })).stdout, 'ok\n');
    }
    for (const c of r.children) await api.killSandbox(c.sandbox?.id ?? '');
    await api.killSandbox(src);
    assert.deepEqual(readdirSync(join(fx.stateDir, 'btrfs', 'layers')), [], 'layers are deleted');
    assert.deepEqual(readdirSync(join(fx.stateDir, 'sandboxes')), [], 'subvolumes are deleted');
    assert.equal(existsSync(join(fx.stateDir, 'btrfs.img')), true);
  });
});
