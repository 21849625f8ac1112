/**
 * Attack: one tenant's REPL code hijacks every exec of another tenant. Kernel 6.7+ lets CAP_SYS_ADMIN in a
 * user namespace mount a binfmt_misc instance keyed to that namespace; when every sandbox of a template
 * shared one user namespace and REPL code held CAP_SYS_ADMIN there, tenant A mounted one and registered an
 * interpreter with the `F` flag for `#!/bin/bash`, and tenant B's next script ran A's program. The same
 * capability mounted cgroupfs (every tenant's cgroup.procs and pressure) and a proc over /proc.
 * Precedent: the issue "Sandboxes that share nothing" (item 1, reproduced on this host); CVE-2022-0492
 * (cgroupfs release_agent from a container); binfmt_misc namespacing (Linux 6.7, "binfmt_misc: enable
 * sandboxed mounts").
 * Contained when: over the HTTP listener as two tenants, A's REPL cannot mount binfmt_misc, cgroupfs or
 * proc in its sandbox (EPERM: no CAP_SYS_ADMIN there), a binfmt_misc instance A mounts in a user namespace
 * of its own making changes nothing for B (nor for A's own sandbox), and B's scripts run as written.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { lastJson, PY_SYSCALL, token } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import { type TwoTenants, twoTenants } from '../helpers/tenant-rest.ts';

const skip = nativeUnavailable();
const MARK = token('HIJACKED');

/** A's attack: the shared-namespace way (mount right where the REPL is), reporting each step's outcome. */
const DIRECT = `${PY_SYSCALL}
os.makedirs("/tmp/bm", exist_ok=True)
with open("/tmp/evil", "w") as f:
    f.write("#!/bin/sh\\necho ${MARK}\\n")
os.chmod("/tmp/evil", 0o755)
out = {"binfmt": libc_call("mount", b"binfmt_misc", b"/tmp/bm", b"binfmt_misc", 0, None)}
if out["binfmt"] == "ok":
    try:
        with open("/tmp/bm/register", "w") as f:
            f.write(":fbx:M::#!/bin/bash::/tmp/evil:F")
        out["register"] = "ok"
    except OSError as e:
        out["register"] = str(e)
os.makedirs("/tmp/cg", exist_ok=True)
out["cgroup2"] = libc_call("mount", b"cgroup2", b"/tmp/cg", b"cgroup2", 0, None)
out["cgroup-cpuset"] = libc_call("mount", b"cgroup", b"/tmp/cg", b"cgroup", 0, b"cpuset")
out["proc"] = libc_call("mount", b"proc", b"/proc", b"proc", 0, None)
out["cgroupns"] = libc_call("unshare", 0x02000000)
print(json.dumps(out))
`;

/**
 * A's attack in a user namespace (and mount namespace) of its own: binfmt_misc there, registered with F, a
 * cgroup namespace refused; the child stays until told to go (a file), so B runs its script meanwhile.
 */
const NESTED = `${PY_SYSCALL}
import time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    uid = os.getuid()
    _libc.prctl(4, 1, 0, 0, 0)  # dumpable: its own /proc/self files writable once it is its namespace's root
    res = {"unshare": libc_call("unshare", 0x10000000 | 0x00020000)}
    if res["unshare"] == "ok":
        # Root of its own namespace (its one uid mapped), as an attacker would make itself.
        for f, text in (("setgroups", "deny"), ("uid_map", "0 %d 1" % uid), ("gid_map", "0 %d 1" % uid)):
            with open("/proc/self/" + f, "w") as fh:
                fh.write(text)
        os.makedirs("/tmp/bm2", exist_ok=True)
        res["binfmt"] = libc_call("mount", b"binfmt_misc", b"/tmp/bm2", b"binfmt_misc", 0, None)
        if res["binfmt"] == "ok":
            try:
                with open("/tmp/bm2/register", "w") as f:
                    f.write(":fbx2:M::#!/bin/bash::/tmp/evil:F")
                res["register"] = "ok"
            except OSError as e:
                res["register"] = str(e)
        res["cgroupns"] = libc_call("unshare", 0x02000000)
        res["cgroup2"] = libc_call("mount", b"cgroup2", b"/tmp/cg", b"cgroup2", 0, None)
    os.write(w, json.dumps(res).encode())
    while not os.path.exists("/tmp/nested-done"):
        time.sleep(0.05)
    os._exit(0)
os.close(w)
print(os.read(r, 65536).decode())
`;

const SCRIPT = "printf '#!/bin/bash\\necho as-written\\n' > /tmp/s.sh && chmod +x /tmp/s.sh && /tmp/s.sh";

describe('abuse: binfmt_misc and mounts from REPL code, across tenants', { skip: skip ?? false }, () => {
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

  it("A's REPL holds no CAP_SYS_ADMIN: binfmt_misc, cgroupfs, proc and a cgroup namespace are refused", async () => {
    const out = lastJson<Record<string, string>>((await t.alice.code(t.a, DIRECT)).stdout, 'REPL');
    for (const k of ['binfmt', 'cgroup2', 'cgroup-cpuset', 'proc', 'cgroupns'])
      assert.equal(out[k], 'EPERM', `${k}: ${JSON.stringify(out)}`);
    const r = await t.bob.exec(t.b, { cmd: SCRIPT });
    assert.equal(r.stdout.trim(), 'as-written', `B's script ran A's interpreter: ${r.stdout}`);
  });

  it("a binfmt_misc instance A mounts in a user namespace of its own reaches neither B nor A's sandbox", async () => {
    const out = JSON.parse((await t.alice.code(t.a, NESTED)).stdout.trim()) as Record<string, string>;
    try {
      assert.equal(out.unshare, 'ok', JSON.stringify(out));
      assert.equal(out.cgroupns, 'EPERM', 'no cgroup namespace, even with a user namespace of its own');
      assert.equal(out.cgroup2, 'EPERM', 'no cgroupfs from a child user namespace');
      // Whatever the kernel allowed there, it is that namespace's alone.
      const theirs = await t.bob.exec(t.b, { cmd: SCRIPT });
      assert.equal(theirs.stdout.trim(), 'as-written', `B: ${theirs.stdout}`);
      const own = await t.alice.exec(t.a, { cmd: SCRIPT });
      assert.equal(own.stdout.trim(), 'as-written', `A's own commands: ${own.stdout}`);
    } finally {
      await t.alice.exec(t.a, { cmd: 'touch /tmp/nested-done' });
    }
  });
});
