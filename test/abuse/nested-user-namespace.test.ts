/**
 * Attack: a nested user namespace — `unshare -U` (util-linux), unshare(CLONE_NEWUSER), clone() and
 * clone3() with CLONE_NEWUSER — from an exec command, and from REPL code. A user namespace of its own gives
 * code a full capability set over new namespaces, the door to most kernel privilege-escalation bugs
 * reachable by unprivileged users.
 * Precedent: sandbox-runtime "should prevent privilege escalation attempts" (`unshare -U`, peers 6b #9);
 * Docker's default seccomp profile (CLONE_NEWUSER refused); CVE-2022-0185 (reached through a user namespace).
 * Contained when: every attempt from a command is refused (EPERM from the agent's command filter; clone3
 * answers ENOSYS so that libc falls back to clone, whose flags can be checked) and no child process is ever
 * created. REPL code may make one — its worker clones every fork child into one of its own — but only as a
 * child of the sandbox's own user namespace, which no process of another sandbox lives in, and holding no
 * capability in the sandbox's (docs/SECURITY.md, "User namespaces").
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { execPython, PY_SYSCALL, replPython } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();

const SCRIPT = `${PY_SYSCALL}
import struct, subprocess
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
out = {"unshare(CLONE_NEWUSER)": libc_call("unshare", CLONE_NEWUSER)}
# clone(flags, stack=0): fork-like if it succeeds; such a child leaves at once.
r = call(56, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
if r == "ok:0":
    os._exit(0)
out["clone(CLONE_NEWUSER)"] = r
# clone3(struct clone_args {flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls}, 64)
args = ctypes.create_string_buffer(struct.pack("=8Q", CLONE_NEWUSER, 0, 0, 0, SIGCHLD, 0, 0, 0), 64)
r = call(435, args, 64)
if r == "ok:0":
    os._exit(0)
out["clone3(CLONE_NEWUSER)"] = r
for argv in (["unshare", "-U", "true"], ["unshare", "--user", "--map-root-user", "id", "-u"]):
    p = subprocess.run(argv, capture_output=True, text=True)
    out[" ".join(argv)] = "exit %d %s" % (p.returncode, (p.stdout + p.stderr).strip())
out["userns"] = os.readlink("/proc/self/ns/user")
print(json.dumps(out))
`;

// In a forked child (so the worker stays where it is): make a user namespace; the worker then asks whose
// child it is (NS_GET_PARENT, from the sandbox's own namespace: a namespace cannot look above itself), and
// the child what it could do in the sandbox's own namespace from there.
const REPL_SCRIPT = `${PY_SYSCALL}
import fcntl, socket
own = os.readlink("/proc/self/ns/user")
mine, theirs = socket.socketpair()
pid = os.fork()
if pid == 0:
    back = os.open("/proc/self/ns/user", os.O_RDONLY)  # the sandbox's own, opened before leaving it
    res = {"unshare": libc_call("unshare", 0x10000000)}
    fds = []
    if res["unshare"] == "ok":
        res["mine"] = os.readlink("/proc/self/ns/user")
        # setns back into it needs CAP_SYS_ADMIN there: a child namespace gives none.
        res["setns_back"] = libc_call("setns", back, 0x10000000)
        fds = [os.open("/proc/self/ns/user", os.O_RDONLY)]
    socket.send_fds(theirs, [json.dumps(res).encode()], fds)
    os._exit(0)
msg, fds, _, _ = socket.recv_fds(mine, 65536, 1)
res = json.loads(msg)
os.waitpid(pid, 0)
if fds:
    res["parent"] = os.readlink("/proc/self/fd/%d" % fcntl.ioctl(fds[0], 0xb702))  # NS_GET_PARENT
res["own"] = own
print(json.dumps(res))
`;

describe('abuse: nested user namespaces', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id: string;
  let other: string;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    id = (await api.createSandbox({})).id;
    other = (await api.createSandbox({})).id;
  });
  after(async () => {
    await fx?.close();
  });

  it('unshare -U, unshare(CLONE_NEWUSER), clone and clone3 with CLONE_NEWUSER are all refused to commands', async () => {
    const res = await execPython<Record<string, string>>(api, id, SCRIPT);
    assert.equal(res['unshare(CLONE_NEWUSER)'], 'EPERM', JSON.stringify(res));
    assert.equal(res['clone(CLONE_NEWUSER)'], 'EPERM');
    assert.equal(res['clone3(CLONE_NEWUSER)'], 'ENOSYS');
    assert.match(res['unshare -U true'] ?? '', /^exit [1-9]\d* .*Operation not permitted/);
    assert.match(
      res['unshare --user --map-root-user id -u'] ?? '',
      /^exit [1-9]\d* .*Operation not permitted/,
    );
  });

  it("a user namespace REPL code makes is a child of the sandbox's own, shared with no other sandbox", async () => {
    const res = await replPython<Record<string, string>>(api, id, REPL_SCRIPT);
    assert.equal(res.unshare, 'ok', JSON.stringify(res));
    assert.equal(res.parent, res.own, 'its parent is the sandbox’s own user namespace');
    assert.notEqual(res.mine, res.own);
    assert.equal(res.setns_back, 'EPERM', 'no capability in the sandbox’s own namespace');
    const theirs = await execPython<{ ns: string }>(
      api,
      other,
      'import json, os\nprint(json.dumps({"ns": os.readlink("/proc/self/ns/user")}))',
    );
    assert.notEqual(theirs.ns, res.own, 'two sandboxes never share a user namespace');
    assert.notEqual(theirs.ns, res.mine);
  });

  it('the sandbox keeps working after the attempts (ordinary clone/fork is unaffected)', async () => {
    const r = await api.exec(id, { cmd: 'sh -c "echo child" & wait' });
    assert.equal(r.stdout, 'child\n');
  });
});
