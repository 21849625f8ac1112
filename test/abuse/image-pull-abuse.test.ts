/**
 * Attack: a hostile or tampered registry feeding the daemon's image pull — a layer whose bytes do not
 * match its digest (a man in the middle, a poisoned cache), a layer tarball with `../` members or an
 * absolute symlink followed by a member through it (path traversal on extraction: the tar-slip class,
 * CVE-2018-1002105-era "zip slip" and the container-runtime layer escapes such as CVE-2019-14271 /
 * CVE-2024-21626's cousins), and a manifest far larger than any real one (memory exhaustion of the daemon).
 *
 * Contained when: each pull is refused with a clear error, nothing is written outside the store, and the
 * store holds no image and no layer afterwards (the pull happens as root in the daemon, so an escape
 * would write anywhere on the host).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createImageStore } from '../../src/images/index.ts';
import { rejectsWith } from '../helpers/assert-error.ts';
import { makeStateDir, quietLog } from '../helpers/native.ts';
import { LAYER_GZ, makeLayer, pushImage, startRegistry, type TestRegistry } from '../helpers/registry.ts';

let reg: TestRegistry;
let work: string;
let stateDir: string;
const outside = `/var/tmp/fbx-outside-${process.pid}`;

/** A tar.gz with hostile members, written by Python's tarfile (GNU tar will not create them). */
function hostileLayer(name: string, script: string): string {
  const out = join(work, `${name}.tar.gz`);
  const py = `import io, tarfile\nt = tarfile.open(${JSON.stringify(out)}, 'w:gz')\ndef f(n, data=b'x'):\n    i = tarfile.TarInfo(n); i.size = len(data); t.addfile(i, io.BytesIO(data))\ndef l(n, target):\n    i = tarfile.TarInfo(n); i.type = tarfile.SYMTYPE; i.linkname = target; t.addfile(i)\n${script}\nt.close()\n`;
  const r = spawnSync('python3', ['-c', py], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return out;
}

const empty = () => {
  assert.deepEqual(
    readdirSync(join(stateDir, 'images')).filter((n) => n !== 'debian.json'),
    [],
  );
  assert.deepEqual(readdirSync(join(stateDir, 'layers')), []);
};

before(async () => {
  work = mkdtempSync('/var/tmp/fbx-pull-abuse-');
  mkdirSync(outside, { recursive: true });
  reg = await startRegistry(join(work, 'registry'));
  stateDir = makeStateDir();
});

after(async () => {
  await reg?.stop();
  for (const d of [work, outside, stateDir]) if (d) rmSync(d, { recursive: true, force: true });
});

test('a layer whose bytes do not match its digest is refused before anything is stored', async () => {
  const l = await reg.pushBlob('abuse/mitm', makeLayer(work, { 'etc/x': 'x\n' }), LAYER_GZ);
  await pushImage(reg, 'abuse/mitm', 'v1', [l]);
  reg.corrupt.add(l.digest);
  const store = createImageStore({ stateDir, log: quietLog() });
  await rejectsWith(store.pull(`${reg.host}/abuse/mitm:v1`), 'unavailable', /failed verification/);
  empty();
});

test("a layer with '../' members is refused and writes nothing outside", async () => {
  const file = hostileLayer('dotdot', `f('ok.txt')\nf('../../../../../../..${outside}/dotdot')`);
  const l = await reg.pushBlob('abuse/dotdot', file, LAYER_GZ);
  await pushImage(reg, 'abuse/dotdot', 'v1', [l]);
  const store = createImageStore({ stateDir, log: quietLog() });
  await rejectsWith(
    store.pull(`${reg.host}/abuse/dotdot:v1`),
    'invalid_argument',
    /cannot be applied safely/,
  );
  assert.ok(!existsSync(join(outside, 'dotdot')), 'nothing written through ..');
  empty();
});

test('an absolute symlink followed by a member through it writes nothing outside', async () => {
  const file = hostileLayer('symlink', `l('esc', ${JSON.stringify(outside)})\nf('esc/pwned')`);
  const l = await reg.pushBlob('abuse/symlink', file, LAYER_GZ);
  await pushImage(reg, 'abuse/symlink', 'v1', [l]);
  const store = createImageStore({ stateDir, log: quietLog() });
  await rejectsWith(
    store.pull(`${reg.host}/abuse/symlink:v1`),
    'invalid_argument',
    /cannot be applied safely/,
  );
  assert.ok(!existsSync(join(outside, 'pwned')), 'nothing written through the symlink');
  empty();
});

test('a manifest over the size bound is refused without reading it all', async () => {
  let sent = 0;
  const hostile = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/vnd.oci.image.manifest.v1+json' });
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    const more = () => {
      while (sent < 64 * 1024 * 1024) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      res.end();
    };
    req.resume();
    more();
  });
  await new Promise<void>((r) => hostile.listen(0, '127.0.0.1', r));
  try {
    const port = (hostile.address() as AddressInfo).port;
    const store = createImageStore({ stateDir, log: quietLog() });
    await rejectsWith(store.pull(`127.0.0.1:${port}/abuse/big:v1`), 'too_large', /manifest over/);
    assert.ok(sent < 64 * 1024 * 1024, 'the daemon stopped reading');
    empty();
  } finally {
    hostile.closeAllConnections();
    await new Promise((r) => hostile.close(r));
  }
});
