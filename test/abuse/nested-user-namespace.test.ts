/**
 * Attack: a nested user namespace — `unshare -U` (util-linux), unshare(CLONE_NEWUSER), clone() and
 * clone3() with CLONE_NEWUSER — from an exec and from the REPL. A user namespace of its own would give
 * sandbox code a full capability set over new namespaces, the door to most kernel privilege-escalation
 * bugs reachable by unprivileged users.
 * Precedent: sandbox-runtime "should prevent privilege escalation attempts" (`unshare -U`, peers 6b #9);
 * Docker's default seccomp profile (CLONE_NEWUSER refused); CVE-2022-0185 (reached through a user namespace).
 * Contained when: every attempt is refused (EPERM from the filter's flag check; clone3 answers ENOSYS so
 * that libc falls back to clone, whose flags can be checked) and no child process is ever created.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { bothPython, PY_SYSCALL } from '../helpers/attacks.ts';
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

describe('abuse: nested user namespaces', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id: string;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    id = (await api.createSandbox({})).id;
  });
  after(async () => {
    await fx?.close();
  });

  it('unshare -U, unshare(CLONE_NEWUSER), clone and clone3 with CLONE_NEWUSER are all refused', async () => {
    const r = await bothPython<Record<string, string>>(api, id, SCRIPT);
    for (const [where, res] of Object.entries(r)) {
      assert.equal(res['unshare(CLONE_NEWUSER)'], 'EPERM', `${where}: ${JSON.stringify(res)}`);
      assert.equal(res['clone(CLONE_NEWUSER)'], 'EPERM', where);
      assert.equal(res['clone3(CLONE_NEWUSER)'], 'ENOSYS', where);
      assert.match(res['unshare -U true'] ?? '', /^exit [1-9]\d* .*Operation not permitted/, where);
      assert.match(
        res['unshare --user --map-root-user id -u'] ?? '',
        /^exit [1-9]\d* .*Operation not permitted/,
        where,
      );
    }
    assert.equal(r.exec.userns, r.repl.userns, 'both still in the sandbox’s own user namespace');
  });

  it('the sandbox keeps working after the attempts (ordinary clone/fork is unaffected)', async () => {
    const r = await api.exec(id, { cmd: 'sh -c "echo child" & wait' });
    assert.equal(r.stdout, 'child\n');
  });
});
