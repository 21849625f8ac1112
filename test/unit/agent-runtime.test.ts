/**
 * container/agent-runtime.ts: how a template's agent starts — the image's python3, or the default image's
 * through its own loader — with symlinks resolved inside the runtime's layer as the sandbox would see them.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { isForkboxError } from '../../src/domain/errors.ts';
import type { ImageRecord } from '../../src/domain/types.ts';
import { agentStart, resolveInRoot } from '../../src/runtimes/native/container/agent-runtime.ts';

const image = (name: string, layers: string[], python: string | null): ImageRecord => ({
  name,
  id: `id-${name}`,
  layers,
  createdAt: 1,
  sizeBytes: 2,
  source: 'test',
  env: {},
  python,
});

/** A merged-/usr Debian-like root: relative and absolute links, as debootstrap makes them. */
function debianLike(): string {
  const root = mkdtempSync(join(tmpdir(), 'fb-runtime-'));
  mkdirSync(join(root, 'usr/bin'), { recursive: true });
  mkdirSync(join(root, 'usr/lib/x86_64-linux-gnu'), { recursive: true });
  mkdirSync(join(root, 'usr/lib/aarch64-linux-gnu'), { recursive: true });
  mkdirSync(join(root, 'usr/lib64'), { recursive: true });
  writeFileSync(join(root, 'usr/bin/python3.11'), '');
  symlinkSync('python3.11', join(root, 'usr/bin/python3'));
  symlinkSync('usr/lib', join(root, 'lib'));
  symlinkSync('usr/lib64', join(root, 'lib64'));
  writeFileSync(join(root, 'usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2'), '');
  writeFileSync(join(root, 'usr/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1'), '');
  symlinkSync('/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2', join(root, 'usr/lib64/ld-linux-x86-64.so.2'));
  symlinkSync('aarch64-linux-gnu/ld-linux-aarch64.so.1', join(root, 'usr/lib/ld-linux-aarch64.so.1'));
  return root;
}

test('resolveInRoot: absolute links restart at the root, .. stops there, loops and missing parts are null', () => {
  const root = debianLike();
  try {
    assert.equal(resolveInRoot(root, '/usr/bin/python3'), 'usr/bin/python3.11');
    assert.equal(
      resolveInRoot(root, '/lib64/ld-linux-x86-64.so.2'),
      'usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2',
    );
    symlinkSync('../../../../etc', join(root, 'usr/bin/up'));
    assert.equal(resolveInRoot(root, '/usr/bin/up'), null, 'no /etc in the root: never the host’s');
    symlinkSync('loop', join(root, 'loop'));
    assert.equal(resolveInRoot(root, '/loop'), null);
    assert.equal(resolveInRoot(root, '/usr/bin/python2'), null);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('agentStart: the image’s python3 when it has one; else the runtime’s loader, libraries and python3', () => {
  const root = debianLike();
  try {
    const own = agentStart(image('app', ['/x'], '/usr/bin/python3'), undefined);
    assert.deepEqual(own, {
      agentArgs: ['/usr/bin/python3', '-I', '/.forkbox/bin/agent.py'],
      runtimeDir: null,
    });

    const rt = image('debian', [root], '/usr/bin/python3');
    const s = agentStart(image('busybox', ['/y'], null), rt);
    assert.equal(s.runtimeDir, root);
    const multiarch = process.arch === 'arm64' ? 'aarch64-linux-gnu' : 'x86_64-linux-gnu';
    const loader = process.arch === 'arm64' ? 'ld-linux-aarch64.so.1' : 'ld-linux-x86-64.so.2';
    assert.deepEqual(s.agentArgs, [
      `/.forkbox/runtime/usr/lib/${multiarch}/${loader}`,
      '--library-path',
      `/.forkbox/runtime/usr/lib/${multiarch}:/.forkbox/runtime/usr/lib`,
      '/.forkbox/runtime/usr/bin/python3.11',
      '-I',
      '/.forkbox/bin/agent.py',
    ]);

    const refused = (runtime: ImageRecord | undefined, why: RegExp) =>
      assert.throws(
        () => agentStart(image('busybox', ['/y'], null), runtime),
        (e) => isForkboxError(e) && e.code === 'requirement_missing' && why.test(e.message),
      );
    refused(undefined, /has no python3.*'debian' image's Python.*not built.*forkbox images build debian/);
    refused(image('debian', [root, '/other'], '/usr/bin/python3'), /not one layer with python3/);
    refused(image('debian', [root], '/usr/bin/python9'), /lacks python3 or the dynamic loader/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
