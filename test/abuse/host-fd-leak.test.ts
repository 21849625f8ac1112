/**
 * Attack: a host file inside the sandbox (issue #11 item 1). The template's agent, and every process forked
 * from it, held fds 1 and 2 on the host's `<state>/templates/<tpl>/container.log` (runc's stdio): code in
 * a sandbox wrote to it without limit (host disk filled, log lines forged); a REPL worker also held the
 * agent's end of its own link, and a fork child kept its source's sockets and pipes. Precedent: runc's
 * CVE-2024-21626 (a leaked host fd let a container reach the host's filesystem) and Docker's
 * CVE-2016-9962 (fds of the runtime visible to processes in the container).
 *
 * Holds when: for every process of a fresh sandbox, a fork child and a snapshot restore, every fd is a
 * pipe, socket, anonymous inode or memfd, or was opened through a mount of that sandbox's own mount
 * table (fdinfo mnt_id, and the file's st_dev, among the devices of its mountinfo); a child holds none of
 * its source's socket or pipe inodes; and writing to every fd reachable from inside changes no file of
 * the state dir.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import {
  channelInodes,
  fileFingerprints,
  initOf,
  isAnonymous,
  mountsOf,
  openFds,
  sandboxPids,
} from '../helpers/sandbox-procs.ts';

const why = nativeUnavailable();

/** User state that holds every kind of fd a REPL can: a file, sockets, a pipe, an eventfd, a child process. */
const HOLD_EVERYTHING = `
import os, socket, subprocess
kept = open('/tmp/kept.txt', 'w')
kept.write('source\\n'); kept.flush()
s1, s2 = socket.socketpair()
listener = socket.socket(); listener.bind(('127.0.0.1', 0)); listener.listen()
pr, pw = os.pipe()
ev = os.eventfd(0) if hasattr(os, 'eventfd') else None
mem = os.memfd_create('user-memfd')
dirfd = os.open('/', os.O_RDONLY | os.O_DIRECTORY)
bg = subprocess.Popen(['sleep', '600'])
'ready'`;

/** From inside: write to every fd of every process that can be opened, through /proc, and to our own. */
const WRITE_EVERYWHERE = `
import os
written = 0
for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
    try:
        fds = os.listdir('/proc/%s/fd' % pid)
    except OSError:
        continue
    for fd in fds:
        path = '/proc/%s/fd/%s' % (pid, fd)
        try:
            if os.readlink(path).startswith('socket:'):
                continue  # sockets (the agent link among them) are not files; a different attack
            w = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            os.write(w, b'{"level":50,"msg":"forged by a sandbox"}\\n')
            written += 1
        except OSError:
            pass
        finally:
            os.close(w)
written`;

/**
 * Every fd of `pids` is anonymous or was opened through one of the sandbox's own mounts (fdinfo mnt_id in
 * the process's own mountinfo). st_dev alone cannot tell: a regular file on an overlay root reports the
 * st_dev of the layer holding it, which is not a mount of the sandbox; outside overlays it is checked too.
 */
function assertOwnFdsOnly(label: string, pids: number[]): void {
  assert.ok(pids.length >= 2, `${label}: expected an agent and a REPL worker, found pids ${pids.join(', ')}`);
  for (const pid of pids) {
    const { ids, devs, overlays } = mountsOf(pid);
    for (const f of openFds(pid)) {
      if (isAnonymous(f)) continue;
      const where = `${label}: pid ${pid} fd ${f.fd} -> ${f.target} (mnt_id ${f.mntId}, dev ${f.dev})`;
      assert.ok(ids.has(f.mntId), `${where} was opened through a mount outside the sandbox`);
      if (!overlays.has(f.mntId))
        assert.ok(devs.has(f.dev), `${where} is on a filesystem not mounted in the sandbox`);
    }
  }
}

describe('abuse: host file descriptors inside a sandbox', { skip: why ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let source = '';

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    source = (await api.createSandbox({ name: 'fd-source' })).id;
    const r = await api.runCode(source, { code: HOLD_EVERYTHING });
    assert.equal(r.value, "'ready'", r.error?.traceback);
  });
  after(async () => {
    await fx?.close();
  });

  it('a fresh sandbox: every fd is its own, writes through every fd leave the state dir unchanged', async () => {
    const pids = sandboxPids(source);
    assertOwnFdsOnly('fresh sandbox', pids);
    const init = initOf(pids);
    // The agent's fds 0-2 are /dev/null, not runc's log file.
    for (const f of openFds(init).filter((x) => x.fd <= 2)) assert.equal(f.target, '/dev/null');
    const skip = [
      'sandboxes',
      'btrfs',
      'layers',
      'inbox',
      'runc',
      'forkbox.db',
      'forkbox.db-wal',
      'forkbox.db-shm',
    ];
    const beforeFiles = fileFingerprints(fx.stateDir, skip);
    assert.ok(
      [...beforeFiles.keys()].some((p) => p.endsWith('/container.log')),
      'the templates’ container.log files are among the compared files',
    );
    const w = await api.runCode(source, { code: WRITE_EVERYWHERE });
    assert.equal(w.ok, true, w.error?.traceback);
    assert.ok(Number(w.value) > 0, 'the attack wrote to some fds (its own /dev/null, pipes, files)');
    assert.deepEqual(fileFingerprints(fx.stateDir, skip), beforeFiles);
  });

  it('a fork child and a child of the child hold none of their source’s sockets or pipes', async () => {
    const fork = await api.forkSandbox(source, { n: 1 });
    const child = fork.children[0]?.sandbox?.id ?? '';
    assert.ok(child, JSON.stringify(fork.children[0]?.error));
    // The child's worker is forked off its PID 1 at the first eval; the user state came along.
    const r = await api.runCode(child, {
      code: "kept.write('child\\n'); kept.flush(); 'child' in open('/tmp/kept.txt').read()",
    });
    assert.equal(r.value, 'True', r.error?.traceback);
    const sent = await api.runCode(child, {
      code: "try:\n    s1.send(b'x')\nexcept OSError as e:\n    print(type(e).__name__)",
    });
    assert.equal(sent.stdout, 'OSError\n', 'a carried socket is not a socket any more');
    const grand = (await api.forkSandbox(child, { n: 1 })).children[0]?.sandbox?.id ?? '';
    assert.ok(grand);
    await api.runCode(grand, { code: 'x = 1' });
    const sourceInodes = channelInodes(sandboxPids(source));
    const childInodes = channelInodes(sandboxPids(child));
    for (const [label, id, theirs] of [
      ['fork child', child, sourceInodes],
      ['child of the child', grand, childInodes],
    ] as const) {
      const pids = sandboxPids(id);
      assertOwnFdsOnly(label, pids);
      const shared = [...channelInodes(pids)].filter((i) => theirs.has(i));
      assert.deepEqual(shared, [], `${label} holds its source's sockets/pipes`);
    }
    // The child wrote to its own copy of the file, reopened in its own root.
    assert.doesNotMatch((await api.readFile(source, '/tmp/kept.txt')).data.toString(), /child/);
  });

  it('a sandbox restored from a snapshot holds only its own fds', async () => {
    const snap = await api.createSnapshot(source);
    const restored = (await api.restoreSnapshot(snap.id, { n: 1 })).children[0]?.sandbox?.id ?? '';
    assert.ok(restored);
    const r = await api.runCode(restored, { code: 'kept.write("restored\\n"); kept.flush(); 1' });
    assert.equal(r.value, '1', r.error?.traceback);
    const pids = sandboxPids(restored);
    assertOwnFdsOnly('restored sandbox', pids);
    const shared = [...channelInodes(pids)].filter((i) => channelInodes(sandboxPids(source)).has(i));
    assert.deepEqual(shared, []);
  });
});
