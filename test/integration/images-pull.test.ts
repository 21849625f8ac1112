/**
 * `forkbox images pull` from a real registry (Debian's docker-registry, started here) that the test fills
 * with images it builds: a multi-layer image with a whiteout over a base layer with python3 (the default
 * image's root), a second image sharing that base (its second pull downloads only the new layer), then
 * `create --image REF` and a command in it; a missing tag, a dead registry and a refused image each fail
 * clearly and leave the store as it was.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { ImageRecord } from '../../src/domain/types.ts';
import { createImageStore } from '../../src/images/index.ts';
import type { SandboxInfo } from '../../src/service/api.ts';
import { rejectsWith } from '../helpers/assert-error.ts';
import { startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { defaultImage, makeStateDir, quietLog } from '../helpers/native.ts';
import {
  LAYER_GZ,
  LAYER_TAR,
  makeLayer,
  pushImage,
  startRegistry,
  type TestRegistry,
  tarLayerDir,
} from '../helpers/registry.ts';
import { registryCli } from '../helpers/registry-suite.ts';

let reg: TestRegistry;
let work: string;
let stateDir: string;
let daemon: Awaited<ReturnType<typeof startServe>> | undefined;

const cli = registryCli(() => stateDir);
let baseDigest: string;
let newLayerDigest: string;
let smallDigest: string;

const store = () => ({
  images: readdirSync(join(stateDir, 'images')).sort(),
  layers: readdirSync(join(stateDir, 'layers')).sort(),
});

before(async () => {
  work = mkdtempSync('/var/tmp/fbx-registry-');
  reg = await startRegistry(join(work, 'registry'));
  const [baseLayer] = defaultImage().layers;
  assert.ok(baseLayer, 'the default image has a layer');
  const base = await reg.pushBlob('test/app', tarLayerDir(work, baseLayer), LAYER_TAR);
  baseDigest = base.digest;
  const l1 = await reg.pushBlob(
    'test/app',
    makeLayer(work, { 'opt/app/old.txt': 'old\n', 'opt/app/keep.txt': 'keep\n', 'etc/app.conf': 'mode=1\n' }),
    LAYER_GZ,
  );
  const l2 = await reg.pushBlob(
    'test/app',
    makeLayer(work, { 'opt/app/.wh.old.txt': '', 'opt/app/new.txt': 'new\n' }),
    LAYER_GZ,
  );
  await pushImage(reg, 'test/app', 'v1', [base, l1, l2], {
    Env: ['PATH=/usr/local/bin:/usr/bin:/bin', 'APP_MODE=pulled'],
    WorkingDir: '/opt/app',
    User: '0:0',
    Cmd: ['python3'],
  });
  // The second image shares the base layer: pushed to its own repository (the registry mounts nothing).
  await reg.pushBlob('test/second', tarLayerDir(work, baseLayer), LAYER_TAR);
  const l3 = await reg.pushBlob('test/second', makeLayer(work, { 'srv/hello.txt': 'second\n' }), LAYER_GZ);
  newLayerDigest = l3.digest;
  await pushImage(reg, 'test/second', 'v1', [base, l3]);
  const small = await reg.pushBlob('test/small', makeLayer(work, { 'bin/tool': 'x\n' }), LAYER_GZ);
  smallDigest = small.digest;
  await pushImage(reg, 'test/small', 'v1', [small]);
  stateDir = makeStateDir();
  daemon = await startServe(stateDir);
});

after(async () => {
  await stopServeAndClean(daemon?.child, stateDir);
  await reg?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

test('pull a multi-layer image: every layer applied with its whiteout, the config honoured', async () => {
  const img = await cli.json<ImageRecord>('images', 'pull', `${reg.host}/test/app:v1`);
  assert.equal(img.layers.length, 3);
  assert.equal(img.python, '/usr/bin/python3');
  assert.equal(img.env.APP_MODE, 'pulled');
  assert.equal(img.config?.workingDir, '/opt/app');
  assert.deepEqual(img.config?.cmd, ['python3']);
  assert.equal(img.ref, `${reg.host}/test/app:v1`);
  assert.equal(reg.blobGets.get(baseDigest), 1);
  // A second pull of the same image is answered from the store: no blob is fetched again.
  await cli.json<ImageRecord>('images', 'pull', `${reg.host}/test/app:v1`);
  assert.equal(reg.blobGets.get(baseDigest), 1);
});

test('create --image REF and run a command in it', async () => {
  const sb = await cli.json<SandboxInfo>('create', '--image', `${reg.host}/test/app:v1`);
  const out = await cli.ok(
    'exec',
    sb.id,
    '--',
    '/bin/sh',
    '-c',
    'cat /opt/app/new.txt /opt/app/keep.txt; test ! -e /opt/app/old.txt && echo whited-out; echo "$APP_MODE"',
  );
  assert.equal(out, 'new\nkeep\nwhited-out\npulled\n');
  await cli.ok('kill', sb.id);
});

test('a second image with a shared base downloads only its new layer', async () => {
  const before = reg.blobGets.get(baseDigest);
  const img = await cli.json<ImageRecord>('images', 'pull', `${reg.host}/test/second:v1`);
  assert.equal(reg.blobGets.get(baseDigest), before, 'the shared base layer was not downloaded again');
  assert.equal(reg.blobGets.get(newLayerDigest), 1);
  const app = (await cli.json<ImageRecord[]>('images', 'ls')).find(
    (i) => i.ref === `${reg.host}/test/app:v1`,
  );
  assert.equal(img.layers[1], app?.layers[2], 'both images stack on the same base layer directory');
});

test('a missing tag and a dead registry fail clearly and leave the store as it was', async () => {
  const was = store();
  const missing = await cli.fails(3, 'images', 'pull', `${reg.host}/test/app:nope`);
  assert.match(missing, /manifest unknown/);
  const dead = await cli.fails(7, 'images', 'pull', '127.0.0.1:1/test/app:v1');
  assert.match(dead, /did not answer \(ECONNREFUSED\)/);
  assert.deepEqual(store(), was);
});

test('a refused image (daemon allow list; remote callers without one) changes nothing', async () => {
  const dir = makeStateDir();
  try {
    const s = createImageStore({ stateDir: dir, log: quietLog(), imageAllow: ['127.0.0.1:9/allowed/*'] });
    const was = readdirSync(join(dir, 'images'));
    await rejectsWith(s.pull(`${reg.host}/test/app:v1`), 'permission_denied', /--image-allow/);
    const open = createImageStore({ stateDir: dir, log: quietLog() });
    await rejectsWith(
      open.pull(`${reg.host}/test/app:v1`, { remote: true }),
      'permission_denied',
      /remote callers/,
    );
    assert.deepEqual(readdirSync(join(dir, 'images')), was);
    assert.deepEqual(readdirSync(join(dir, 'layers')), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('concurrent pulls of one image share one download', async () => {
  const dir = makeStateDir();
  try {
    const s = createImageStore({ stateDir: dir, log: quietLog() });
    const ref = `${reg.host}/test/small:v1`;
    const [a, b] = await Promise.all([s.pull(ref), s.pull(ref)]);
    assert.equal(a.id, b.id);
    assert.equal(a.python, null, 'an image without python3 is recorded as such');
    assert.equal(reg.blobGets.get(smallDigest), 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
