/**
 * Attack: privilege escalation through exec — as a non-root user inside the sandbox, run a setuid-root
 * copy of python3 and copies carrying file capabilities (`security.capability`, set by sandbox root),
 * from an exec (via setpriv) and from a REPL subprocess (os.setuid in the child).
 * Precedent: sandbox-runtime "should prevent privilege escalation attempts" (setuid binaries, peers 6b
 * #9); Docker's `no-new-privileges`.
 * Contained when: nothing is gained — the setuid copy runs with the caller's euid and no capabilities,
 * a file-capability copy either runs with none or is refused at exec — because every process in a
 * sandbox has no_new_privs. The same steps on the host (no no_new_privs) give euid 0 and the file's
 * capabilities: checked once by hand, which is what the assertions below would then see.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { CAP, lastJson, replPython } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();

/** VFS_CAP_REVISION_2 with the effective bit: v2 xattr = magic, then (permitted, inheritable) × 2. */
const ARM = `
set -eu
cp /usr/bin/python3 /tmp/suid-py && chown 0:0 /tmp/suid-py && chmod 4755 /tmp/suid-py
cp /usr/bin/python3 /tmp/cap-py && cp /usr/bin/python3 /tmp/cap-all-py
python3 - <<'EOF'
import os, struct
def setcaps(path, mask):
    os.setxattr(path, "security.capability", struct.pack("<IIIII", 0x02000001, mask & 0xffffffff, 0, mask >> 32, 0))
# Capabilities inside the sandbox's bounding set, then ones outside it (CAP_SYS_ADMIN).
setcaps("/tmp/cap-py", (1 << ${CAP.CHOWN}) | (1 << ${CAP.DAC_OVERRIDE}) | (1 << ${CAP.SETUID}))
setcaps("/tmp/cap-all-py", (1 << ${CAP.DAC_OVERRIDE}) | (1 << ${CAP.SETUID}) | (1 << ${CAP.SYS_ADMIN}))
EOF
stat -c '%n %a %u' /tmp/suid-py
python3 -c 'import os; print(all(os.getxattr(p, "security.capability") for p in ("/tmp/cap-py", "/tmp/cap-all-py")))'
`;

/** What a process knows about its own privilege, as one JSON line. */
const PROBE = `import json, os
s = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
print(json.dumps({"euid": os.geteuid(), "eff": s["CapEff"].strip(), "prm": s["CapPrm"].strip(), "nnp": s["NoNewPrivs"].strip()}))`;

interface Probe {
  euid: number;
  eff: string;
  prm: string;
  nnp: string;
}

describe('abuse: setuid and file-capability escalation', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id: string;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    id = (await api.createSandbox({})).id;
    const armed = await api.exec(id, { cmd: ARM, timeoutSeconds: 60 });
    assert.equal(armed.exitCode, 0, armed.stderr);
    assert.equal(armed.stdout, '/tmp/suid-py 4755 0\nTrue\n', 'the binaries are armed');
  });
  after(async () => {
    await fx?.close();
  });

  const gainedNothing = (p: Probe, where: string) => {
    assert.equal(p.euid, 1000, `${where}: still euid 1000 (${JSON.stringify(p)})`);
    assert.equal(BigInt(`0x${p.eff}`), 0n, `${where}: no effective capabilities`);
    assert.equal(BigInt(`0x${p.prm}`), 0n, `${where}: no permitted capabilities`);
    assert.equal(p.nnp, '1', `${where}: no_new_privs`);
  };

  it('from an exec, as uid 1000: the setuid-root copy and the file-capability copies gain nothing', async () => {
    // setpriv keeps its permitted set across the uid change (keep-caps); the plain python3 in between
    // is an exec as uid 1000, which clears it, so the final exec starts from no capabilities at all.
    const asUser = (bin: string) =>
      api.exec(id, {
        argv: [
          ...['setpriv', '--reuid', '1000', '--regid', '1000', '--clear-groups', '/usr/bin/python3', '-c'],
          'import os, sys; os.execv(sys.argv[1], sys.argv[1:])',
          ...[bin, '-c', PROBE],
        ],
      });
    const plain = await asUser('/usr/bin/python3');
    gainedNothing(lastJson<Probe>(plain.stdout, 'plain'), 'plain python3 (control)');
    const suid = await asUser('/tmp/suid-py');
    gainedNothing(lastJson<Probe>(suid.stdout, 'setuid'), 'setuid-root python3');
    const caps = await asUser('/tmp/cap-py');
    gainedNothing(lastJson<Probe>(caps.stdout, 'file caps'), 'file capabilities in the bounding set');
    // Capabilities outside the bounding set with the effective bit: the kernel refuses the exec.
    const all = await asUser('/tmp/cap-all-py');
    if (all.exitCode === 0)
      gainedNothing(lastJson<Probe>(all.stdout, 'file caps'), 'CAP_SYS_ADMIN file caps');
    else assert.match(all.stderr, /Operation not permitted/);
  });

  it('from the REPL, a child that drops to uid 1000 and execs them gains nothing either', async () => {
    const r = await replPython<Record<string, Probe | string>>(
      api,
      id,
      [
        'import json, os, subprocess',
        `probe = ${JSON.stringify(PROBE)}`,
        'def drop():',
        '    os.setgroups([]); os.setgid(1000); os.setuid(1000)',
        'out = {}',
        'for b in ("/tmp/suid-py", "/tmp/cap-py", "/tmp/cap-all-py"):',
        '    try:',
        '        p = subprocess.run([b, "-c", probe], preexec_fn=drop, capture_output=True, text=True)',
        '        out[b] = json.loads(p.stdout) if p.returncode == 0 else "exit %d %s" % (p.returncode, p.stderr)',
        '    except PermissionError as e:',
        '        out[b] = "refused: %s" % e',
        'print(json.dumps(out))',
      ].join('\n'),
    );
    for (const [bin, p] of Object.entries(r)) {
      if (typeof p === 'string') {
        assert.equal(bin, '/tmp/cap-all-py', `${bin}: ${p}`);
        assert.match(p, /Operation not permitted|refused/);
      } else gainedNothing(p, `REPL child → ${bin}`);
    }
    assert.equal(typeof r['/tmp/suid-py'], 'object', 'the setuid copy ran');
  });
});
