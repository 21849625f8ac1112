/**
 * A pulled image's config honoured at run time, with images the test pushes to a real registry (Debian's
 * docker-registry): `WorkingDir` is the default cwd of commands (an explicit cwd still wins), `User` —
 * a name resolved against the image's /etc/passwd, or uid:gid — is the user commands run as, a User the
 * image does not have fails clearly (a terminal exec as that User still gets its terminal as controlling
 * terminal), `Entrypoint` + `Cmd` are what `forkbox run --image REF` runs with no
 * command words, and `forkbox images rm REF` removes an image by its reference (refused while in use).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { ImageRecord } from '../../src/domain/types.ts';
import type { SandboxInfo } from '../../src/service/api.ts';
import { createDaemonClient } from '../../src/transports/daemon-client.ts';
import { socketPathFor } from '../../src/transports/daemon-launcher.ts';
import { startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { defaultImage, makeStateDir } from '../helpers/native.ts';
import {
  type Blob,
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

const { run: forkbox, ok } = registryCli(() => stateDir);
const ref = (tag: string) => `${reg.host}/test/cfg:${tag}`;
async function create(tag: string): Promise<string> {
  return (JSON.parse(await ok('--json', 'create', '--image', ref(tag))) as SandboxInfo).id;
}

before(async () => {
  work = mkdtempSync('/var/tmp/fbx-registry-');
  reg = await startRegistry(join(work, 'registry'));
  const [baseLayer] = defaultImage().layers;
  assert.ok(baseLayer, 'the default image has a layer');
  const base = await reg.pushBlob('test/cfg', tarLayerDir(work, baseLayer), LAYER_TAR);
  const app = await reg.pushBlob('test/cfg', makeLayer(work, { 'opt/app/': '', 'srv/w/': '' }), LAYER_GZ);
  const layers: Blob[] = [base, app];
  const env = ['PATH=/usr/local/bin:/usr/bin:/bin', 'APP_MODE=configured'];
  await pushImage(reg, 'test/cfg', 'named', layers, {
    Env: env,
    WorkingDir: '/opt/app',
    User: 'daemon',
    Entrypoint: ['/bin/sh', '-c'],
    Cmd: ['echo "$APP_MODE in $(pwd) as $(id -un):$(id -g)"'],
  });
  await pushImage(reg, 'test/cfg', 'ids', layers, { Env: env, WorkingDir: '/srv/w', User: '1234:2345' });
  await pushImage(reg, 'test/cfg', 'ghost', layers, { Env: env, User: 'ghost' });
  stateDir = makeStateDir();
  daemon = await startServe(stateDir);
});

after(async () => {
  await stopServeAndClean(daemon?.child, stateDir);
  await reg?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

test("WorkingDir is commands' default cwd and User (a name in /etc/passwd) their user", async () => {
  const id = await create('named');
  assert.equal(await ok('exec', id, '--', '/bin/sh', '-c', 'pwd; id -un; id -g'), '/opt/app\ndaemon\n1\n');
  assert.equal(await ok('exec', id, '--cwd', '/tmp', '--', 'pwd'), '/tmp\n', 'an explicit cwd wins');
  // The image's user is not root: root's files stay out of reach, as in the image's own runtime.
  const r = await forkbox('exec', id, '--', '/bin/sh', '-c', 'touch /root/x');
  assert.notEqual(r.status, 0, 'the daemon user cannot write to /root');
  await ok('kill', id);
});

test('a terminal exec runs as the User, with the terminal as its controlling terminal', async () => {
  const id = await create('named');
  const api = createDaemonClient({ socketPath: socketPathFor(stateDir) });
  const ex = await api.startExec(id, {
    argv: ['/bin/sh', '-c', 'id -un; ps -o tty= -p $$; stty size'],
    tty: { rows: 30, cols: 90 },
  });
  let out = '';
  let seq = -1;
  for (let i = 0; i < 30; i++) {
    const p = await api.pollExec(id, ex.id, { afterSeq: seq, waitMs: 1000 });
    for (const c of p.chunks) {
      seq = Math.max(seq, c.seq);
      out += c.data;
    }
    if (p.done) break;
  }
  // `ps` names the controlling terminal (pts/N), or '?' when the process has none.
  assert.match(out, /^daemon\r\npts\/\d+\s*\r\n30 90\r\n$/, JSON.stringify(out));
  await ok('kill', id);
});

test('User as uid:gid', async () => {
  const id = await create('ids');
  assert.equal(
    await ok('exec', id, '--', '/bin/sh', '-c', 'pwd; id -u; id -g; id -G'),
    '/srv/w\n1234\n2345\n2345\n',
  );
  await ok('kill', id);
});

test("a User the image's /etc/passwd lacks fails clearly", async () => {
  const id = await create('ghost');
  const r = await forkbox('exec', id, '--', 'true');
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /User 'ghost' is not in its \/etc\/passwd/);
  await ok('kill', id);
});

test('run --image REF with no command runs the Entrypoint and Cmd', async () => {
  assert.equal(await ok('run', '--image', ref('named')), 'configured in /opt/app as daemon:1\n');
  const none = await forkbox('run', '--image', ref('ids'));
  assert.notEqual(none.status, 0);
  assert.match(none.stderr, /has no default command/);
});

test('images rm REF removes the image pulled from REF; refused while a sandbox uses it', async () => {
  const id = await create('ghost');
  const busy = await forkbox('images', 'rm', ref('ghost'));
  assert.notEqual(busy.status, 0);
  assert.match(busy.stderr, new RegExp(`used by 1 live sandbox\\(es\\) \\(${id}\\)`));
  await ok('kill', id);
  await ok('images', 'rm', ref('ghost'));
  const left = JSON.parse(await ok('--json', 'images', 'ls')) as ImageRecord[];
  assert.equal(
    left.find((i) => i.ref === ref('ghost')),
    undefined,
  );
  assert.ok(left.find((i) => i.ref === ref('named')));
});
