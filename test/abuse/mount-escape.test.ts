/**
 * Attack: escaping or rewriting the filesystem view with mount, remount, umount, pivot_root and chroot —
 * from an exec and from the REPL (neither holds CAP_SYS_ADMIN or CAP_SYS_CHROOT: a sandbox drops both once
 * set up, where the REPL once held both): remount the agent's code at /.forkbox/bin read-write and rewrite
 * it, and the classic chroot breakout (chroot into a subdirectory, walk `..` up, chroot there).
 * Precedent: sandbox-runtime "should prevent privilege escalation attempts" (`mount`, peers 6b #9);
 * the chroot breakout documented in chroot(2) ("this call does not change the current working directory").
 * Contained when: every mount, pivot_root and chroot from an exec fails; from the REPL, the agent's code
 * cannot be written, created, renamed, removed or chmod'ed (a read-write remount is refused, and its files
 * belong to host root, a uid the sandbox does not map), the host's copy is byte-for-byte unchanged, and the
 * chroot breakout is refused (were chroot allowed, it would end at the sandbox's own root, never the host's).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type HostMarker, hostMarker, replPython } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();

/** sha256 of every file under dir (relative path → hash), with its mode and owner. */
function treeHash(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else
        out[p.slice(dir.length)] =
          `${createHash('sha256').update(readFileSync(p)).digest('hex')} ${st.mode.toString(8)} ${st.uid}`;
    }
  };
  walk(dir);
  return out;
}

describe('abuse: mount, remount, pivot_root and chroot', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id: string;
  let marker: HostMarker;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    id = (await api.createSandbox({})).id;
    marker = hostMarker();
  });
  after(async () => {
    marker?.remove();
    await fx?.close();
  });

  it('an exec can neither mount, remount, unmount, pivot_root nor chroot', async () => {
    const steps = [
      'mount -t tmpfs none /mnt',
      'mount --bind /tmp /mnt',
      'mount -o remount,rw /.forkbox/bin',
      'mount -o remount,rw /sys',
      'umount -l /.forkbox/bin',
      'umount -l /proc',
      'mkdir -p /tmp/nr/old && pivot_root /tmp/nr /tmp/nr/old',
      'chroot / true',
      `python3 -c 'import os; os.chroot("/tmp")'`,
    ];
    const r = await api.exec(id, { cmd: steps.map((s) => `${s}; echo "rc=$?"`).join('\n') });
    const rcs = r.stdout.trim().split('\n');
    assert.equal(rcs.length, steps.length, r.stdout + r.stderr);
    rcs.forEach((rc, i) => {
      assert.match(rc, /^rc=[1-9]\d*$/, `${steps[i]} succeeded`);
    });
    const still = await api.exec(id, {
      cmd: `awk '$5 == "/.forkbox/bin" { print $6 }' /proc/self/mountinfo`,
    });
    assert.match(still.stdout, /^ro,/, 'the agent code is still mounted read-only');
  });

  it('the REPL cannot rewrite the agent’s code, even after remounting it read-write', async () => {
    const agentDir = join(fx.stateDir, 'agent');
    const before = treeHash(agentDir);
    assert.ok(
      Object.keys(before).some((p) => p.endsWith('/agent.py')),
      'found the host copy of the agent',
    );
    const r = await replPython<Record<string, string>>(
      api,
      id,
      [
        'import ctypes, errno, json, os',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'def attempt(f):',
        '    try:',
        '        f(); return "ok"',
        '    except OSError as e:',
        '        return errno.errorcode.get(e.errno, str(e.errno))',
        'out = {}',
        'MS_REMOUNT, MS_BIND = 0x20, 0x1000',
        // Whether the remount works or not, the files below must stay out of reach.
        'rc = libc.mount(None, b"/.forkbox/bin", None, MS_REMOUNT | MS_BIND, None)',
        'out["remount rw (informational)"] = "ok" if rc == 0 else errno.errorcode.get(ctypes.get_errno())',
        'out["append agent.py"] = attempt(lambda: open("/.forkbox/bin/agent.py", "a").write("#"))',
        'out["truncate agent.py"] = attempt(lambda: os.truncate("/.forkbox/bin/agent.py", 0))',
        'out["create evil.py"] = attempt(lambda: open("/.forkbox/bin/evil.py", "w").write("#"))',
        'out["rename agent.py"] = attempt(lambda: os.rename("/.forkbox/bin/agent.py", "/.forkbox/bin/x.py"))',
        'out["unlink agent.py"] = attempt(lambda: os.unlink("/.forkbox/bin/agent.py"))',
        'out["chmod agent.py"] = attempt(lambda: os.chmod("/.forkbox/bin/agent.py", 0o777))',
        'out["chown agent.py"] = attempt(lambda: os.chown("/.forkbox/bin/agent.py", 0, 0))',
        'out["setxattr agent.py"] = attempt(lambda: os.setxattr("/.forkbox/bin/agent.py", "user.x", b"1"))',
        'print(json.dumps(out))',
      ].join('\n'),
    );
    for (const [what, outcome] of Object.entries(r)) {
      if (what.includes('informational')) continue;
      assert.match(outcome, /^(EACCES|EPERM|EROFS)$/, `${what} → ${outcome}`);
    }
    assert.deepEqual(treeHash(agentDir), before, 'the host copy of the agent is unchanged');
    assert.equal((await api.exec(id, { argv: ['echo', 'served'] })).stdout, 'served\n');
  });

  it('a chroot breakout from the REPL ends at the sandbox’s own root', async () => {
    await api.exec(id, { cmd: 'echo sandbox > /sandbox-root-marker' });
    const r = await replPython<{ root: string[]; sees_host_marker: boolean; mine: string; chroot?: string }>(
      api,
      id,
      [
        'import json, os',
        'rfd, wfd = os.pipe()',
        'pid = os.fork()',
        'if pid == 0:',
        '    try:',
        '        os.makedirs("/tmp/jail", exist_ok=True)',
        '        try:',
        '            os.chroot("/tmp/jail")  # the cwd stays outside the new root',
        '        except PermissionError:',
        '            os.write(wfd, json.dumps({"chroot": "EPERM"}).encode())',
        '            os._exit(0)',
        '        for _ in range(64):',
        '            os.chdir("..")',
        '        os.chroot(".")',
        `        res = {"root": sorted(os.listdir("/")), "sees_host_marker": os.path.exists(${JSON.stringify(marker.path)}),`,
        '               "mine": open("/sandbox-root-marker").read().strip()}',
        '        os.write(wfd, json.dumps(res).encode())',
        '    finally:',
        '        os._exit(0)',
        'os.close(wfd)',
        'data = b""',
        'while True:',
        '    chunk = os.read(rfd, 65536)',
        '    if not chunk: break',
        '    data += chunk',
        'os.close(rfd); os.waitpid(pid, 0)',
        'print(data.decode())',
      ].join('\n'),
    );
    // No CAP_SYS_CHROOT anywhere in a sandbox: the breakout cannot even start. Were it allowed, it must end
    // at the sandbox's own root.
    if (r.chroot === undefined) {
      assert.equal(r.sees_host_marker, false, 'the host file is not reachable');
      assert.equal(r.mine, 'sandbox', 'the walk stopped at the sandbox root');
      assert.ok(r.root.includes('.forkbox'), `the sandbox's root: ${r.root.join(' ')}`);
    }
    assert.equal(r.chroot, 'EPERM', 'the REPL holds no CAP_SYS_CHROOT');
  });
});
