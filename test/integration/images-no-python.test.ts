/**
 * An image without python3 or glibc (busybox-style: one static /bin/busybox and its applet links),
 * pushed to a real registry (Debian's docker-registry, started here) and pulled: its sandboxes run
 * forkbox's agent on the default image's Python, mounted read-only at /.forkbox/runtime, while every
 * command is the image's own. Commands, file writes and reads, a fork and a command in the child work;
 * `eval` (code_run in Python) fails clearly; the default image cannot be removed under them; killing them
 * leaves nothing behind.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import type { ImageRecord } from '../../src/domain/types.ts';
import type { ForkResult, SandboxInfo } from '../../src/service/api.ts';
import { startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { leftovers } from '../helpers/leftovers.ts';
import { makeStateDir } from '../helpers/native.ts';
import { LAYER_GZ, pushImage, startRegistry, type TestRegistry } from '../helpers/registry.ts';
import { registryCli } from '../helpers/registry-suite.ts';

const BUSYBOX = '/bin/busybox'; // busybox-static (scripts/setup.sh)

let reg: TestRegistry;
let work: string;
let stateDir: string;
let daemon: Awaited<ReturnType<typeof startServe>> | undefined;
const cli = registryCli(() => stateDir);
const ref = () => `${reg.host}/test/busybox:v1`;

/** A layer holding only /bin/busybox (static) and a link per applet, plus an empty /tmp. */
function busyboxLayer(): string {
  const root = join(work, 'busybox-root');
  mkdirSync(join(root, 'bin'), { recursive: true });
  mkdirSync(join(root, 'tmp'), { mode: 0o1777 });
  copyFileSync(BUSYBOX, join(root, 'bin', 'busybox'));
  const list = spawnSync(BUSYBOX, ['--list-full'], { encoding: 'utf8' });
  assert.equal(list.status, 0, `${BUSYBOX} --list-full (install busybox-static): ${list.stderr}`);
  for (const applet of list.stdout.split('\n').filter((l) => l && l !== 'bin/busybox')) {
    mkdirSync(dirname(join(root, applet)), { recursive: true });
    symlinkSync('/bin/busybox', join(root, applet));
  }
  const out = join(work, 'busybox.tar.gz');
  const tar = spawnSync('tar', ['-czf', out, '-C', root, '--numeric-owner', '--owner=0', '--group=0', '.']);
  assert.equal(tar.status, 0, String(tar.stderr));
  return out;
}

before(async () => {
  work = mkdtempSync('/var/tmp/fbx-nopy-');
  reg = await startRegistry(join(work, 'registry'));
  const layer = await reg.pushBlob('test/busybox', busyboxLayer(), LAYER_GZ);
  await pushImage(reg, 'test/busybox', 'v1', [layer], { Env: ['PATH=/usr/sbin:/usr/bin:/sbin:/bin'] });
  stateDir = makeStateDir();
  daemon = await startServe(stateDir);
});

after(async () => {
  await stopServeAndClean(daemon?.child, stateDir);
  await reg?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

test('a busybox image: commands, files, a fork, a clear code_run refusal, and nothing left after kill', async () => {
  const img = await cli.json<ImageRecord>('images', 'pull', ref());
  assert.equal(img.python, null, 'the image has no python3');

  const sb = await cli.json<SandboxInfo>('create', '--image', ref());
  const out = await cli.ok('exec', sb.id, '--', 'sh', '-c', 'echo hi; ls /; ls /lib* /usr/lib 2>&1; env');
  assert.match(out, /^hi\n/);
  assert.match(out, /^bin$/m, "ls / lists the image's own root");
  assert.match(out, /No such file or directory/, 'the image has no libraries: the command is static busybox');
  assert.doesNotMatch(
    out,
    /^(LD_|PYTHON)/m,
    "commands get the image's environment, no loader or Python variables",
  );
  assert.match(out, /^PATH=\/usr\/sbin:\/usr\/bin:\/sbin:\/bin$/m);

  // Files both ways through the agent.
  const local = join(work, 'note.txt');
  writeFileSync(local, 'written from the host\n');
  await cli.ok('cp', local, `${sb.id}:/tmp/note.txt`);
  assert.equal(await cli.ok('exec', sb.id, '--', 'cat', '/tmp/note.txt'), 'written from the host\n');
  await cli.ok('exec', sb.id, '--', 'sh', '-c', 'echo made inside > /tmp/inside.txt');
  await cli.ok('cp', `${sb.id}:/tmp/inside.txt`, join(work, 'inside.txt'));
  assert.equal(readFileSync(join(work, 'inside.txt'), 'utf8'), 'made inside\n');

  // A fork: the child has the parent's files and runs its own commands.
  const fork = await cli.json<ForkResult>('fork', sb.id);
  const child = fork.children[0]?.sandbox?.id ?? assert.fail(`one child: ${JSON.stringify(fork.children)}`);
  assert.equal(
    await cli.ok(
      'exec',
      child,
      '--',
      'sh',
      '-c',
      'cat /tmp/note.txt; echo child > /tmp/c.txt; cat /tmp/c.txt',
    ),
    'written from the host\nchild\n',
  );
  assert.equal(
    (await cli.run('exec', sb.id, '--', 'cat', '/tmp/c.txt')).status,
    1,
    "the parent's files are its own",
  );

  // A fork of the fork: the child's agent passes the runtime mount on.
  const again = await cli.json<ForkResult>('fork', child);
  const grandchild =
    again.children[0]?.sandbox?.id ?? assert.fail(`one grandchild: ${JSON.stringify(again.children)}`);
  assert.equal(await cli.ok('exec', grandchild, '--', 'cat', '/tmp/c.txt'), 'child\n');

  // code_run in Python: the agent's Python is forkbox's, never the user's.
  for (const id of [sb.id, child]) {
    const err = await cli.fails(10, 'eval', id, '1 + 1');
    assert.match(err, /has no python3, so it has no Python REPL/);
    assert.match(err, /exec/);
  }

  // The default image is the agent's runtime here: it cannot be removed under live sandboxes.
  assert.match(await cli.fails(4, 'images', 'rm', 'debian'), /image 'debian' is used by 3 live sandbox/);

  await cli.ok('kill', grandchild);
  await cli.ok('kill', child);
  await cli.ok('kill', sb.id);
  assert.deepEqual(leftovers(stateDir), []);
});
