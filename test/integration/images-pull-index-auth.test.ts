/**
 * Registry pulls beyond a single manifest, against real registries (Debian's docker-registry) started
 * here: an OCI image index with linux/amd64 and linux/arm64 images resolves to this host's platform (only
 * that image's layer is downloaded); an index offering only foreign platforms fails naming them; a private
 * registry behind htpasswd (Basic) auth is pulled from with the credentials of the Docker config.json the
 * daemon is given through DOCKER_CONFIG, and refused clearly (permission_denied, saying what to do)
 * without credentials or with wrong ones, leaving the store as it was.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { ImageRecord } from '../../src/domain/types.ts';
import { createImageStore } from '../../src/images/index.ts';
import { hostArchitecture } from '../../src/images/registry/manifest.ts';
import { rejectsWith } from '../helpers/assert-error.ts';
import { startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { makeStateDir, quietLog } from '../helpers/native.ts';
import {
  LAYER_GZ,
  makeLayer,
  OCI_INDEX,
  OCI_MANIFEST,
  pushImage,
  startRegistry,
  type TestRegistry,
} from '../helpers/registry.ts';
import { registryCli } from '../helpers/registry-suite.ts';

const HOST = hostArchitecture();
const OTHER = HOST === 'arm64' ? 'amd64' : 'arm64';
const AUTH = { username: 'fbx-user', password: 'pull-secret-42' };

let reg: TestRegistry;
let priv: TestRegistry;
let work: string;
let stateDir: string;
let daemon: Awaited<ReturnType<typeof startServe>> | undefined;
let hostManifest: string;
let hostLayer: string;
let otherLayer: string;

const { run: forkbox } = registryCli(() => stateDir);

/** A Docker config.json directory holding `creds` for `host`. */
function dockerConfig(name: string, host: string, creds: { username: string; password: string }): string {
  const dir = join(work, name);
  mkdirSync(dir);
  const auth = Buffer.from(`${creds.username}:${creds.password}`).toString('base64');
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ auths: { [host]: { auth } } }));
  return dir;
}

before(async () => {
  work = mkdtempSync('/var/tmp/fbx-registry-');
  reg = await startRegistry(join(work, 'registry'));
  const mine = await reg.pushBlob('test/multi', makeLayer(work, { 'etc/arch': `${HOST}\n` }), LAYER_GZ);
  const theirs = await reg.pushBlob('test/multi', makeLayer(work, { 'etc/arch': `${OTHER}\n` }), LAYER_GZ);
  hostLayer = mine.digest;
  otherLayer = theirs.digest;
  const m1 = await pushImage(reg, 'test/multi', `only-${HOST}`, [mine], {}, HOST);
  const m2 = await pushImage(reg, 'test/multi', `only-${OTHER}`, [theirs], {}, OTHER);
  hostManifest = m1.digest;
  const entry = (m: { digest: string; size: number }, architecture: string) => ({
    mediaType: OCI_MANIFEST,
    digest: m.digest,
    size: m.size,
    platform: { os: 'linux', architecture },
  });
  // The foreign image first, so that picking the first entry would be caught.
  await reg.pushManifest(
    'test/multi',
    'v1',
    { schemaVersion: 2, mediaType: OCI_INDEX, manifests: [entry(m2, OTHER), entry(m1, HOST)] },
    OCI_INDEX,
  );
  const m3 = await pushImage(reg, 'test/multi', 'only-s390x', [theirs], {}, 's390x');
  await reg.pushManifest(
    'test/multi',
    'foreign',
    { schemaVersion: 2, mediaType: OCI_INDEX, manifests: [entry(m2, OTHER), entry(m3, 's390x')] },
    OCI_INDEX,
  );

  priv = await startRegistry(join(work, 'private'), AUTH);
  const secret = await priv.pushBlob('team/secret', makeLayer(work, { 'etc/secret': 'yes\n' }), LAYER_GZ);
  await pushImage(priv, 'team/secret', 'v1', [secret]);

  stateDir = makeStateDir();
  daemon = await startServe(stateDir, [], {
    env: { DOCKER_CONFIG: dockerConfig('docker-ok', priv.host, AUTH) },
  });
});

after(async () => {
  await stopServeAndClean(daemon?.child, stateDir);
  await reg?.stop();
  await priv?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

test("a multi-arch index resolves to this host's platform; the other image is not downloaded", async () => {
  const r = await forkbox('--json', 'images', 'pull', `${reg.host}/test/multi:v1`);
  assert.equal(r.status, 0, r.stderr);
  const img = JSON.parse(r.stdout) as ImageRecord;
  assert.equal(img.digest, hostManifest, `the linux/${HOST} manifest was picked`);
  assert.equal(img.layers.length, 1);
  assert.equal(reg.blobGets.get(hostLayer), 1);
  assert.equal(reg.blobGets.get(otherLayer), undefined, `the linux/${OTHER} layer was not fetched`);
});

test('an index with only foreign platforms fails naming the platforms it offers', async () => {
  const was = readdirSync(join(stateDir, 'images')).sort();
  const r = await forkbox('images', 'pull', `${reg.host}/test/multi:foreign`);
  assert.equal(r.status, 3, r.stderr);
  assert.match(r.stderr, new RegExp(`no image for linux/${HOST}`));
  assert.match(r.stderr, new RegExp(`linux/${OTHER}, linux/s390x`));
  assert.deepEqual(readdirSync(join(stateDir, 'images')).sort(), was);
});

test("a private registry: pulled with the daemon's DOCKER_CONFIG credentials", async () => {
  const r = await forkbox('--json', 'images', 'pull', `${priv.host}/team/secret:v1`);
  assert.equal(r.status, 0, r.stderr);
  const img = JSON.parse(r.stdout) as ImageRecord;
  assert.equal(img.ref, `${priv.host}/team/secret:v1`);
});

test('a private registry without credentials or with wrong ones: permission_denied, store unchanged', async () => {
  const dir = makeStateDir();
  try {
    const ref = `${priv.host}/team/secret:v1`;
    const was = readdirSync(join(dir, 'images'));
    const none = createImageStore({
      stateDir: dir,
      log: quietLog(),
      env: { HOME: join(work, 'no-home') },
    });
    await rejectsWith(none.pull(ref), 'permission_denied', /no credentials\).*Log in to it.*config\.json/);
    const wrong = createImageStore({
      stateDir: dir,
      log: quietLog(),
      env: { DOCKER_CONFIG: dockerConfig('docker-bad', priv.host, { ...AUTH, password: 'wrong' }) },
    });
    await rejectsWith(wrong.pull(ref), 'permission_denied', /credentials refused.*Check the credentials/);
    assert.deepEqual(readdirSync(join(dir, 'layers')), []);
    assert.deepEqual(readdirSync(join(dir, 'images')), was);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
