/**
 * Attack: symlink escapes through the file API and the host-side diff — symlinks planted inside the
 * sandbox to a marker file (and its directory) this test writes on the host, absolute and relative; a
 * write through a symlink; a write to a non-existent target under a symlinked directory; and a TOCTOU
 * race: a background process swapping a directory and a symlink to the host directory (renameat2
 * RENAME_EXCHANGE, in a tight loop) while the test reads, writes, lists, stats and diffs through the
 * swapped path hundreds of times. The diff matters most: it reads the sandbox's layers on the host.
 * Precedent: cyanheads/filesystem-mcp-server #21; DesktopCommanderMCP #420 (non-existent target under a
 * symlinked dir); vercel/ai #17419; node-tar CVE-2021-32803/32804 (peers 6b #13).
 * Contained when: the host marker is never read, listed or stat'ed (no answer shows its content, size or
 * a sibling's name), never changed, and nothing is created beside it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type HostMarker, hostMarker } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();

/** Swap /tmp/race (a directory holding `marker`) with /tmp/race-l (a symlink to argv[1]) N times. */
const RACER = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
os.makedirs("/tmp/race", exist_ok=True)
open("/tmp/race/marker", "w").write("inside")
if not os.path.lexists("/tmp/race-l"):
    os.symlink(sys.argv[1], "/tmp/race-l")
print("racing", flush=True)
for i in range(int(sys.argv[2])):
    if libc.renameat2(AT_FDCWD, b"/tmp/race", AT_FDCWD, b"/tmp/race-l", RENAME_EXCHANGE) != 0:
        print("renameat2 failed", ctypes.get_errno(), flush=True)
        sys.exit(1)
`;

describe('abuse: symlink escapes through the file API and the diff', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let a: string;
  let b: string;
  let m: HostMarker;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    a = (await api.createSandbox({})).id;
    b = (await api.createSandbox({})).id;
    m = hostMarker();
    const plant = await api.exec(a, {
      cmd: [
        `ln -s ${m.path} /tmp/link`,
        `ln -s ${m.dir} /tmp/dlink`,
        `ln -s ../../../../../../..${m.path} /tmp/rel-link`,
        `ln -s /proc/1/root${m.dir} /tmp/proc-link`,
        'mkdir -p /tmp/deep && ln -s ../dlink /tmp/deep/hop',
      ].join(' && '),
    });
    assert.equal(plant.exitCode, 0, plant.stderr);
  });
  after(async () => {
    m?.remove();
    await fx?.close();
  });

  const attempt = async (what: string, f: () => Promise<unknown>): Promise<'ok' | 'error'> => {
    let outcome: 'ok' | 'error' = 'ok';
    try {
      const got = await f();
      assert.ok(!m.leaked(got), `${what} leaked the host marker: ${JSON.stringify(got).slice(0, 500)}`);
    } catch (e) {
      if (e instanceof assert.AssertionError) throw e;
      assert.ok(!m.leaked((e as Error).message), `${what} leaked the host marker in an error`);
      outcome = 'error';
    }
    assert.ok(m.untouched(), `${what} changed the host marker or wrote beside it`);
    return outcome;
  };
  const read = (p: string) => async () => (await api.readFile(a, p)).data.toString('utf8');

  it('planted symlinks lead nowhere: read, list, stat, write, move, delete and mkdir through them', async () => {
    for (const link of ['/tmp/link', '/tmp/rel-link']) {
      await attempt(`read ${link}`, read(link));
      await attempt(`stat ${link}`, () => api.statFile(a, link));
    }
    for (const dir of ['/tmp/dlink', '/tmp/proc-link', '/tmp/deep/hop']) {
      await attempt(`read ${dir}/marker`, read(`${dir}/marker`));
      await attempt(`list ${dir}`, () => api.listFiles(a, dir, { recursive: true }));
      await attempt(`list ${dir}/`, () => api.listFiles(a, `${dir}/`));
      await attempt(`stat ${dir}/marker`, () => api.statFile(a, `${dir}/marker`));
      await attempt(`write ${dir}/marker`, () => api.writeFile(a, `${dir}/marker`, Buffer.from('x')));
      await attempt(`write new ${dir}/new`, () => api.writeFile(a, `${dir}/new`, Buffer.from('x')));
      await attempt(`write new ${dir}/sub/new`, () =>
        api.writeFile(a, `${dir}/sub/new`, Buffer.from('x'), { createDirs: true }),
      );
      await attempt(`mkdir ${dir}/made`, () => api.mkdir(a, `${dir}/made`));
      await attempt(`move ${dir}/marker out`, async () => {
        await api.moveFile(a, `${dir}/marker`, '/tmp/stolen', { overwrite: true });
        return (await api.readFile(a, '/tmp/stolen')).data.toString();
      });
      await attempt(`move into ${dir}`, async () => {
        await api.writeFile(a, '/tmp/bait', Buffer.from('bait'));
        await api.moveFile(a, '/tmp/bait', `${dir}/marker`, { overwrite: true });
      });
      await attempt(`delete ${dir}/marker`, () => api.deleteFile(a, `${dir}/marker`));
    }
    // Written through a symlink: the write replaces the link inside the sandbox.
    await attempt('write through /tmp/link', () => api.writeFile(a, '/tmp/link', Buffer.from('replaced')));
    assert.equal((await api.readFile(a, '/tmp/link')).data.toString(), 'replaced');
  });

  it('the host-side diff never follows a planted symlink', async () => {
    for (const [x, y] of [
      [a, b],
      [b, a],
    ] as const) {
      for (const p of [
        '/tmp/rel-link',
        '/tmp/dlink/marker',
        '/tmp/proc-link/marker',
        '/tmp/deep/hop/marker',
      ]) {
        await attempt(`diff ${x} ${y} unified ${p}`, () => api.diffSandboxes(x, y, { unifiedFor: p }));
      }
      await attempt(`diff ${x} ${y} under /tmp/dlink`, () =>
        api.diffSandboxes(x, y, { paths: ['/tmp/dlink'] }),
      );
      await attempt(`diff ${x} ${y} whole`, () => api.diffSandboxes(x, y));
    }
  });

  it('a directory ↔ symlink swap race never lets a call reach the host', async () => {
    const rounds = 40;
    // At the lowest priority: it swaps whenever the agent is not busy serving the calls below.
    const racer = await api.startExec(a, {
      argv: ['nice', '-n', '19', 'python3', '-c', RACER, m.dir, String(50_000_000)],
    });
    try {
      const seen = new Set<string>();
      for (let i = 0; i < rounds; i++) {
        seen.add(await attempt(`race read #${i}`, read('/tmp/race/marker')));
        await attempt(`race stat #${i}`, () => api.statFile(a, '/tmp/race/marker'));
        await attempt(`race list #${i}`, () => api.listFiles(a, '/tmp/race'));
        await attempt(`race write #${i}`, () => api.writeFile(a, '/tmp/race/marker', Buffer.from('inside')));
        await attempt(`race write new #${i}`, () => api.writeFile(a, `/tmp/race/new-${i}`, Buffer.from('x')));
        // The diff walks the layers on the host: the call to race above all (each costs ~0.2 s: 1 round in 4).
        if (i % 4 === 0) {
          const [x, y] = i % 8 === 0 ? [a, b] : [b, a];
          await attempt(`race diff #${i}`, () =>
            api.diffSandboxes(x, y, { paths: ['/tmp/race'], unifiedFor: '/tmp/race/marker' }),
          );
        }
      }
      // The race was live: reads through the path met the directory at some times and the link at others.
      assert.deepEqual([...seen].sort(), ['error', 'ok'], 'both sides of the swap were hit');
      const polled = await api.pollExec(a, racer.id);
      assert.equal(polled.done, false, `the racer was still swapping: ${JSON.stringify(polled.chunks)}`);
    } finally {
      await api.cancelExec(a, racer.id);
    }
  });
});
