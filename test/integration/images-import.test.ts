import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { isForkboxError } from '../../src/domain/errors.ts';
import { createImageStore } from '../../src/images/index.ts';

const dirs: string[] = [];
const mounts: string[] = [];
after(() => {
  for (const m of mounts.reverse()) spawnSync('umount', ['-l', m]);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function missing(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (extracting owners, mknod, overlay mounts)';
  for (const tool of ['getfattr', 'setfattr', 'tar']) {
    if (spawnSync(tool, ['--version']).error) return `${tool} not installed`;
  }
  return undefined;
}

function tmp(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

function sh(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** A small rootfs with an OCI whiteout, an opaque-dir marker, a python3 symlink chain and a setuid file. */
function makeRootfs(): string {
  const src = tmp('fbx-src-');
  chmodSync(src, 0o755);
  for (const d of ['etc', 'opq', 'usr/bin', 'home/user']) mkdirSync(join(src, d), { recursive: true });
  writeFileSync(join(src, 'etc/motd'), 'hello\n');
  writeFileSync(join(src, '.wh.gone'), '');
  writeFileSync(join(src, 'opq/.wh..wh..opq'), '');
  writeFileSync(join(src, 'opq/keep'), 'keep\n');
  writeFileSync(join(src, 'usr/bin/python3.11'), '#!/bin/sh\n');
  chmodSync(join(src, 'usr/bin/python3.11'), 0o755);
  symlinkSync('python3.11', join(src, 'usr/bin/python3'));
  writeFileSync(join(src, 'usr/bin/su'), '#!/bin/sh\n');
  chmodSync(join(src, 'usr/bin/su'), 0o4755);
  writeFileSync(join(src, 'home/user/notes'), 'n\n');
  chownSync(join(src, 'home/user'), 1000, 1000);
  chownSync(join(src, 'home/user/notes'), 1000, 1000);
  return src;
}

function checkLayer(layer: string): void {
  // Whiteout: a 0/0 character device, shifted to the sandbox's root.
  const wh = lstatSync(join(layer, 'gone'));
  assert.ok(wh.isCharacterDevice(), 'gone is a character device');
  assert.equal(wh.rdev, 0);
  assert.equal(wh.uid, 100000);
  assert.ok(!existsSync(join(layer, '.wh.gone')));
  // Opaque marker → xattr on the directory.
  assert.ok(!existsSync(join(layer, 'opq/.wh..wh..opq')));
  assert.match(
    sh('getfattr', ['-h', '-n', 'trusted.overlay.opaque', '--absolute-names', join(layer, 'opq')]),
    /"y"/,
  );
  assert.equal(lstatSync(join(layer, 'home/user/notes')).uid, 101000);
  assert.equal(lstatSync(join(layer, 'usr/bin/su')).mode & 0o7777, 0o4755);
  assert.equal(lstatSync(join(layer, 'usr/bin/su')).uid, 100000);
}

test('importImage from a tar: whiteouts converted, owners shifted, cached on the second call', async (t) => {
  const why = missing();
  if (why) return t.skip(why);
  const src = makeRootfs();
  const tarFile = join(tmp('fbx-tar-'), 'rootfs.tar');
  sh('tar', ['--numeric-owner', '--xattrs', '-C', src, '-cf', tarFile, '.']);
  const stateDir = tmp('fbx-state-');
  const store = createImageStore({ stateDir });
  const phases: string[] = [];
  const rec = await store.importImage('t1', tarFile, { onProgress: (e) => phases.push(e.phase) });
  assert.equal(rec.name, 't1');
  assert.equal(rec.python, '/usr/bin/python3');
  assert.equal(rec.source, `import:${tarFile}`);
  assert.equal(rec.env.LANG, 'C.UTF-8');
  assert.equal(rec.layers.length, 1);
  const layer = rec.layers[0] as string;
  assert.ok(layer.startsWith(join(stateDir, 'layers/')));
  assert.match(layer.slice(layer.lastIndexOf('/') + 1), /^[0-9a-f]{12}$/);
  assert.ok(rec.sizeBytes > 0);
  assert.ok(phases.includes('extracting') && phases.includes('shifting') && phases.includes('whiteouts'));
  checkLayer(layer);
  assert.deepEqual(readdirSync(join(stateDir, 'tmp')), [], 'build area cleaned');

  // Cached: same record back, nothing rebuilt.
  const again = await store.importImage('t1', tarFile);
  assert.deepEqual(again, rec);
  assert.deepEqual(
    store.list().map((r) => r.name),
    ['t1'],
  );

  // Same content under another name shares the layer; remove keeps it until the last user goes.
  const t2 = await store.importImage('t2', tarFile);
  assert.deepEqual(t2.layers, rec.layers);
  store.remove('t1');
  assert.ok(existsSync(layer));
  assert.equal(store.get('t1'), undefined);
  store.remove('t2');
  assert.ok(!existsSync(layer));
  assert.throws(
    () => store.require('t2'),
    (e: unknown) => isForkboxError(e) && e.code === 'not_found',
  );
});

test('the converted whiteouts work in a real overlay mount', async (t) => {
  const why = missing();
  if (why) return t.skip(why);
  const src = makeRootfs();
  const stateDir = tmp('fbx-state-');
  const store = createImageStore({ stateDir });
  const rec = await store.importImage('top', src);
  const base = tmp('fbx-base-');
  writeFileSync(join(base, 'gone'), 'should be hidden');
  mkdirSync(join(base, 'opq'));
  writeFileSync(join(base, 'opq/old'), 'should be hidden');
  writeFileSync(join(base, 'visible'), 'from base');
  const merged = tmp('fbx-merged-');
  sh('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${rec.layers[0]}:${base}`, merged]);
  mounts.push(merged);
  assert.ok(!existsSync(join(merged, 'gone')), 'whiteout hides the lower file');
  assert.deepEqual(readdirSync(join(merged, 'opq')), ['keep'], 'opaque dir hides lower entries');
  assert.ok(existsSync(join(merged, 'visible')));
  sh('umount', [merged]);
  mounts.pop();
});

test('importImage from a directory: cached on the second call, different content under the same name refused', async (t) => {
  const why = missing();
  if (why) return t.skip(why);
  const src = makeRootfs();
  const stateDir = tmp('fbx-state-');
  const store = createImageStore({ stateDir });
  const rec = await store.importImage('d1', src);
  checkLayer(rec.layers[0] as string);
  // The source directory itself is untouched (copied, not shifted in place).
  assert.equal(lstatSync(join(src, 'home/user/notes')).uid, 1000);
  assert.ok(existsSync(join(src, '.wh.gone')));
  const again = await store.importImage('d1', src);
  assert.equal(again.createdAt, rec.createdAt);
  assert.equal(again.id, rec.id);

  writeFileSync(join(src, 'etc/new'), 'changed\n');
  await assert.rejects(
    store.importImage('d1', src),
    (e: unknown) => isForkboxError(e) && e.code === 'already_exists',
  );
  await assert.rejects(
    store.importImage('../x', src),
    (e: unknown) => isForkboxError(e) && e.code === 'invalid_argument',
  );
  await assert.rejects(
    store.importImage('x', join(src, 'nope')),
    (e: unknown) => isForkboxError(e) && e.code === 'not_found',
  );
});

test('a failing import leaves no image and no build directory behind', async (t) => {
  const why = missing();
  if (why) return t.skip(why);
  const src = tmp('fbx-bad-');
  writeFileSync(join(src, 'big'), 'x');
  chownSync(join(src, 'big'), 70000, 0);
  const stateDir = tmp('fbx-state-');
  const store = createImageStore({ stateDir });
  await assert.rejects(store.importImage('bad', src), /big: owner uid 70000 is outside/);
  assert.deepEqual(store.list(), []);
  assert.deepEqual(readdirSync(join(stateDir, 'tmp')), []);
  assert.deepEqual(readdirSync(join(stateDir, 'layers')), []);
});

test('build directories of dead processes are cleaned, those of live ones kept', async (t) => {
  const why = missing();
  if (why) return t.skip(why);
  const stateDir = tmp('fbx-state-');
  const store = createImageStore({ stateDir });
  // pid 999999999 is above the kernel's pid_max: certainly dead. pid 1 is certainly alive.
  mkdirSync(join(stateDir, 'tmp/img-999999999-dead/rootfs'), { recursive: true });
  mkdirSync(join(stateDir, 'tmp/img-1-live/rootfs'), { recursive: true });
  await store.importImage('small', makeRootfs());
  assert.deepEqual(readdirSync(join(stateDir, 'tmp')), ['img-1-live']);
});

test('concurrent imports of the same content share one layer; a complete orphan layer is reused', async (t) => {
  const why = missing();
  if (why) return t.skip(why);
  const src = makeRootfs();
  const stateDir = tmp('fbx-state-');
  const store = createImageStore({ stateDir });
  const [a, b] = await Promise.all([store.importImage('a', src), store.importImage('b', src)]);
  assert.deepEqual(a.layers, b.layers);
  assert.equal(readdirSync(join(stateDir, 'layers')).length, 1);
  // Simulate a crash after the layer was renamed into place but before metadata was written.
  rmSync(join(stateDir, 'images/a.json'));
  rmSync(join(stateDir, 'images/b.json'));
  const fresh = createImageStore({ stateDir });
  const c = await fresh.importImage('c', src);
  assert.deepEqual(c.layers, a.layers);
  assert.equal(c.sizeBytes, a.sizeBytes);
  assert.equal(c.python, '/usr/bin/python3');
});
