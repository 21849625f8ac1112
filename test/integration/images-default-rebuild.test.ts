/**
 * Upgrading forkbox changes the default image's recipe (its package list): `images build debian` must
 * then replace the old `debian` image — when nothing is built on it — instead of failing with "already
 * exists" and leaving `npm run setup` broken. Refused (and the old image kept) when the caller says the
 * old one is in use; an image of the same name from elsewhere (an import) is never replaced.
 *
 * No debootstrap runs here: the temp store's layer for the current recipe is a read-only bind of the
 * default image's layer in the main state dir, which the store finds complete and reuses.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ForkboxError, isForkboxError } from '../../src/domain/errors.ts';
import type { ImageRecord } from '../../src/domain/types.ts';
import { createImageStore } from '../../src/images/index.ts';
import { defaultImage, nativeUnavailable } from '../helpers/native.ts';

const skip = nativeUnavailable();
const dirs: string[] = [];
const mounts: string[] = [];
after(() => {
  for (const m of mounts.reverse()) spawnSync('umount', ['-l', m]);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A state dir holding an old-recipe `debian` (source `source`) and the current recipe's layer. */
function storeWithOldDebian(source: string): { stateDir: string; oldLayer: string; current: ImageRecord } {
  const current = defaultImage();
  const stateDir = mkdtempSync(join(tmpdir(), 'fbx-rebuild-'));
  dirs.push(stateDir);
  for (const d of ['layers', 'images', 'tmp']) mkdirSync(join(stateDir, d), { mode: 0o700 });
  const real = current.layers[0];
  assert.ok(real, 'the default image has a layer');
  const bound = join(stateDir, 'layers', basename(real));
  mkdirSync(bound);
  const r = spawnSync('mount', ['--bind', '-o', 'ro', real, bound]);
  assert.equal(r.status, 0, `bind mount: ${r.stderr}`);
  mounts.push(bound);
  const oldLayer = join(stateDir, 'layers', 'a0a0a0a0a0a0');
  mkdirSync(join(oldLayer, 'etc'), { recursive: true });
  writeFileSync(join(oldLayer, 'etc', 'os-release'), 'old recipe\n');
  const old: ImageRecord = { ...current, id: 'a0'.repeat(32), layers: [oldLayer], source };
  writeFileSync(join(stateDir, 'images', 'debian.json'), JSON.stringify(old));
  return { stateDir, oldLayer, current };
}

describe('images build debian after the default recipe changed', { skip: skip ?? false }, () => {
  it('replaces the old default image when allowed, and deletes its unused layer', async () => {
    const { stateDir, oldLayer, current } = storeWithOldDebian('debootstrap:bookworm');
    const store = createImageStore({ stateDir });
    const seen: string[] = [];
    const rec = await store.buildDebian({
      mayReplace: (old) => seen.push(old.id),
      onProgress: (e) => seen.push(e.phase),
    });
    assert.equal(rec.id, current.id, 'the image now has the current recipe');
    assert.equal(rec.name, 'debian');
    assert.deepEqual(seen.slice(0, 2), ['a0'.repeat(32), 'replacing']);
    const onDisk = JSON.parse(readFileSync(join(stateDir, 'images', 'debian.json'), 'utf8')) as ImageRecord;
    assert.equal(onDisk.id, current.id);
    assert.equal(existsSync(oldLayer), false, 'the old layer, used by nothing now, is deleted');
  });

  it('keeps the old image when the caller refuses (a sandbox or snapshot is built on it)', async () => {
    const { stateDir, oldLayer } = storeWithOldDebian('debootstrap:bookworm');
    const store = createImageStore({ stateDir });
    await assert.rejects(
      store.buildDebian({
        mayReplace: () => {
          throw new ForkboxError('conflict', 'in use');
        },
      }),
      (e: unknown) => isForkboxError(e) && e.code === 'conflict',
    );
    assert.equal(store.get('debian')?.id, 'a0'.repeat(32), 'the old record stays');
    assert.ok(existsSync(join(oldLayer, 'etc', 'os-release')), 'and its layer');
  });

  it('never replaces a `debian` image that was imported, not built', async () => {
    const { stateDir, oldLayer } = storeWithOldDebian('import:/srv/rootfs');
    const store = createImageStore({ stateDir });
    await assert.rejects(
      store.buildDebian({ mayReplace: () => undefined }),
      (e: unknown) => isForkboxError(e) && e.code === 'already_exists',
    );
    assert.ok(existsSync(oldLayer));
  });
});
