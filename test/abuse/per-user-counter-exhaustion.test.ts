/**
 * Attack: one tenant starves the kernel's per-user counters that another tenant's sandboxes (and the host's
 * root) count against. When every sandbox ran as host uid 100000 in one user namespace owned by root, a
 * sandbox holding the 128 inotify instances (fs.inotify.max_user_instances) gave every other sandbox on the
 * host, and the daemon itself, EMFILE: `tail -f`, file watchers and dev servers broke. POSIX message-queue
 * bytes (RLIMIT_MSGQUEUE) were shared the same way.
 * Precedent: the issue "Sandboxes that share nothing" (item 2, reproduced on this host); Podman's
 * `--userns=auto` and LXD's `security.idmap.isolated` (a host uid range per container); the kernel's
 * ucounts, charged up the chain of user namespaces to each namespace's owner.
 * Contained when: over the HTTP listener, with A's sandbox holding every inotify instance and every
 * message-queue byte its owner may have, B's sandbox still makes both, and so does the host's root.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, watch } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { lastJson, PY_SYSCALL } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import { type TwoTenants, twoTenants } from '../helpers/tenant-rest.ts';

const skip = nativeUnavailable();

/** Take as many as the kernel gives (kept in the REPL's globals), and say how many and why it stopped. */
const HOARD = `${PY_SYSCALL}
class Attr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long), ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]
_libc.mq_open.restype = ctypes.c_int
hoard_ino, hoard_mq = [], []
ino_stop = mq_stop = "none"
for i in range(100000):
    fd = _libc.inotify_init()
    if fd < 0:
        ino_stop = errno.errorcode.get(ctypes.get_errno(), "?")
        break
    hoard_ino.append(fd)
for i in range(10000):
    attr = Attr(0, 10, 8192, 0)
    fd = _libc.mq_open(("/hoard%d" % i).encode(), os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(attr))
    if fd < 0:
        mq_stop = errno.errorcode.get(ctypes.get_errno(), "?")
        break
    hoard_mq.append(fd)
print(json.dumps({"inotify": len(hoard_ino), "inotify_stop": ino_stop, "mq": len(hoard_mq), "mq_stop": mq_stop}))
`;

/** What B (a command) can still make: a few inotify instances and one message queue. */
const PROBE = `${PY_SYSCALL}
class Attr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long), ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]
_libc.mq_open.restype = ctypes.c_int
def one():
    return "ok" if _libc.inotify_init() >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
out = {"inotify": [one() for _ in range(4)]}
attr = Attr(0, 10, 8192, 0)
fd = _libc.mq_open(b"/probe", os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(attr))
out["mq"] = "ok" if fd >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
print(json.dumps(out))
`;

describe('abuse: per-user kernel counters across tenants', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let t: TwoTenants;

  before(async () => {
    fx = await openNative();
    t = await twoTenants(fx);
  });
  after(async () => {
    await t?.listener.close(2000);
    await fx?.close();
  });

  it("A holding every inotify instance and message-queue byte it may have leaves B's and root's alone", async () => {
    const held = lastJson<{ inotify: number; inotify_stop: string; mq: number; mq_stop: string }>(
      (await t.alice.code(t.a, HOARD)).stdout,
      'REPL',
    );
    // A ran into its own limits (so the hoard is real), not into nothing.
    assert.equal(held.inotify_stop, 'EMFILE', JSON.stringify(held));
    assert.ok(held.inotify > 0, JSON.stringify(held));
    assert.notEqual(held.mq_stop, 'none', JSON.stringify(held));
    const r = await t.bob.exec(t.b, { argv: ['python3', '-c', PROBE] });
    assert.equal(r.exitCode, 0, r.stderr);
    const probe = lastJson<{ inotify: string[]; mq: string }>(r.stdout, 'exec');
    assert.deepEqual(probe.inotify, ['ok', 'ok', 'ok', 'ok'], `B's inotify: ${JSON.stringify(probe)}`);
    assert.equal(probe.mq, 'ok', `B's message queue: ${JSON.stringify(probe)}`);
    // The host's root (this process, like the daemon) still gets inotify instances.
    const dir = mkdtempSync(join(tmpdir(), 'fbx-inotify-'));
    try {
      const w = watch(dir);
      w.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
