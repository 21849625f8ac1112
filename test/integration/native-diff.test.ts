/**
 * Diffing sandboxes (docs/ARCHITECTURE.md, "Diff") against the real runtime: forks of one source changed in different
 * ways, a fork against its source, two unrelated sandboxes of the same image, and a unified diff. The
 * diff reads only the layers on the host; nothing runs in the sandboxes for it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxError } from '../../src/domain/errors.ts';
import type { DiffResult, ForkboxApi } from '../../src/service/api.ts';
import type { DiffEntry } from '../../src/service/ports.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();
const paths = (es: DiffEntry[]) => es.map((e) => e.path);
/** Only what the tests wrote: the runtime itself may touch other paths (e.g. /tmp) in any sandbox. */
const WORK = { paths: ['/work'] };

describe('diffing sandboxes', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let src: string;
  let k1: string;
  let k2: string;

  const sh = async (id: string, cmd: string) => {
    const r = await api.exec(id, { cmd });
    assert.equal(r.exitCode, 0, `${cmd}: ${r.stderr}`);
    return r.stdout;
  };

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    src = (await api.createSandbox({ name: 'src', memoryMb: 256 })).id;
    await sh(
      src,
      [
        'mkdir -p /work/sub /work/tree/deep',
        "printf 'alpha\\nbeta\\ngamma\\n' > /work/text.txt",
        'echo 1234 > /work/same-size.txt',
        'echo keep > /work/keep.txt',
        'echo bye > /work/sub/gone.txt',
        'echo t > /work/tree/deep/f',
        'head -c 100000 /dev/urandom > /work/blob.bin',
      ].join(' && '),
    );
    const r = await api.forkSandbox(src, { n: 2 });
    assert.ok(
      r.children.every((c) => c.ok),
      JSON.stringify(r.children),
    );
    [k1, k2] = r.children.map((c) => c.sandbox?.id ?? '') as [string, string];
    // k1: adds a file, modifies text.txt, deletes sub/gone.txt.
    await sh(
      k1,
      "echo new > /work/added-in-k1.txt && printf 'alpha\\nBETA\\ngamma\\n' > /work/text.txt && rm /work/sub/gone.txt",
    );
    // k2: same-size content change, chmod, removes a whole directory tree, adds a symlink to a host secret.
    await sh(
      k2,
      'echo 9999 > /work/same-size.txt && chmod 600 /work/keep.txt && rm -r /work/tree && ln -s /etc/shadow /work/link',
    );
  });
  after(async () => {
    await fx?.close();
  });

  it('child vs child: exactly what each changed since the fork', async () => {
    const d = await api.diffSandboxes(k1, k2, WORK);
    assert.equal(d.a, k1);
    assert.equal(d.b, k2);
    assert.match(d.base ?? '', /^s-/, 'the common layer is the fork snapshot');
    assert.equal(d.truncated, false);
    assert.deepEqual(paths(d.added), ['/work/link', '/work/sub/gone.txt']);
    assert.deepEqual(paths(d.removed), [
      '/work/added-in-k1.txt',
      '/work/tree',
      '/work/tree/deep',
      '/work/tree/deep/f',
    ]);
    assert.deepEqual(
      d.modified.map((e) => [e.path, e.changes]),
      [
        ['/work/keep.txt', ['mode']],
        ['/work/same-size.txt', ['content']],
        ['/work/text.txt', ['content']],
      ],
    );
    const link = d.added.find((e) => e.path === '/work/link');
    assert.equal(link?.b?.type, 'symlink');
    assert.equal(link?.b?.linkTarget, '/etc/shadow');
    const same = d.modified.find((e) => e.path === '/work/same-size.txt');
    assert.match(same?.a?.sha256 ?? '', /^[0-9a-f]{64}$/);
    assert.notEqual(same?.a?.sha256, same?.b?.sha256);
  });

  it('child vs source: only the child changes (files from before the fork compare equal)', async () => {
    const d = await api.diffSandboxes(src, k1, WORK);
    assert.ok(d.base && !d.base.startsWith('s-'), `base ${d.base} is the image layer, below the fork`);
    assert.deepEqual(paths(d.added), ['/work/added-in-k1.txt']);
    assert.deepEqual(paths(d.removed), ['/work/sub/gone.txt']);
    assert.deepEqual(
      d.modified.map((e) => [e.path, e.changes]),
      [['/work/text.txt', ['content']]],
    );
    // Unfiltered, the test's own paths are all there too (the runtime may add a few of its own).
    const all = await api.diffSandboxes(src, k1);
    for (const p of ['/work/added-in-k1.txt', '/work/sub/gone.txt', '/work/text.txt'])
      assert.ok(
        [...all.added, ...all.removed, ...all.modified].some((e) => e.path === p),
        p,
      );
    assert.ok(!all.modified.some((e) => e.path === '/work/blob.bin'));
  });

  it('gives a unified diff of a modified text file', async () => {
    const d: DiffResult = await api.diffSandboxes(src, k1, {
      paths: ['/work/text.txt'],
      unifiedFor: '/work/text.txt',
    });
    assert.equal(
      d.unified,
      '--- a/work/text.txt\n+++ b/work/text.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n',
    );
    const link = await api.diffSandboxes(k1, k2, { paths: ['/work/link'], unifiedFor: '/work/link' });
    assert.equal(link.unified, '/work/link in B is a symlink, not a regular file\n');
  });

  it('two unrelated sandboxes of the same image share the image layer', async () => {
    const x = (await api.createSandbox({ memoryMb: 256 })).id;
    const y = (await api.createSandbox({ memoryMb: 256 })).id;
    await sh(x, 'mkdir -p /work && echo x > /work/only-x && echo a > /etc/motd');
    await sh(y, 'mkdir -p /work && echo y > /work/only-y && rm -f /etc/issue');
    const d = await api.diffSandboxes(x, y, { paths: ['/work', '/etc/motd', '/etc/issue'] });
    assert.ok(d.base && !d.base.startsWith('s-'), `base ${d.base} is the image layer`);
    assert.deepEqual(paths(d.added), ['/work/only-y']);
    assert.deepEqual(paths(d.removed), ['/etc/issue', '/work/only-x']);
    assert.deepEqual(paths(d.modified), ['/etc/motd']);
    await api.killSandbox(x);
    await api.killSandbox(y);
  });

  it('refuses an unknown or ended sandbox', async () => {
    await assert.rejects(api.diffSandboxes(src, 'nope'), (e: ForkboxError) => e.code === 'not_found');
    const z = (await api.createSandbox({ memoryMb: 256 })).id;
    await api.killSandbox(z);
    await assert.rejects(api.diffSandboxes(src, z), (e: ForkboxError) => e.code === 'conflict');
  });
});
