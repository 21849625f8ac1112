/**
 * Attack: holding or handing on the capabilities that setting up a sandbox needs — CAP_SYS_ADMIN,
 * CAP_NET_ADMIN and CAP_SYS_CHROOT, which a new sandbox's PID 1 holds in its own user namespace until its
 * set-up is done. An exec command checks what it holds; REPL code checks the worker's and tries to raise
 * them for a program it runs (capset into the inheritable set, then PR_CAP_AMBIENT_RAISE) — ambient
 * capabilities survive execve.
 * Precedent: Docker's default capability set and `no-new-privileges`; sandbox-runtime "should prevent
 * privilege escalation attempts" (peers 6b #9).
 * Contained when: no process of the sandbox — exec commands, the REPL worker, its subprocesses — holds
 * any of the three (effective or bounding), no process has ambient capabilities, the REPL cannot raise
 * them, every process has no_new_privs, and root in the sandbox is an unprivileged host uid of the
 * sandbox's own block (container 0..65535 → host base..base+65535, base in forkbox's uid space).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import {
  CAP,
  capMask,
  hasCap,
  hostPidsWith,
  replPython,
  sandboxHostPids,
  token,
  waitFor,
} from '../helpers/attacks.ts';
import {
  blockBase,
  type NativeFixture,
  nativeUnavailable,
  openNative,
  UID_SPACE_START,
} from '../helpers/native.ts';

const skip = nativeUnavailable();
const FORBIDDEN = [CAP.SYS_ADMIN, CAP.NET_ADMIN, CAP.SYS_CHROOT] as const;

describe('abuse: capabilities', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id: string;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    id = (await api.createSandbox({})).id;
    await api.runCode(id, { code: '1' }); // the REPL worker starts when first needed
  });
  after(async () => {
    await fx?.close();
  });

  const withoutForbidden = (status: string, where: string) => {
    const bnd = capMask(status, 'CapBnd');
    for (const cap of FORBIDDEN)
      assert.equal(hasCap(bnd, cap), false, `${where}: cap ${cap} in the bounding set`);
    for (const cap of FORBIDDEN)
      assert.equal(hasCap(capMask(status, 'CapEff'), cap), false, `${where}: cap ${cap} effective`);
    assert.equal(capMask(status, 'CapAmb'), 0n, `${where}: ambient capabilities`);
    assert.match(status, /^NoNewPrivs:\s*1$/m, `${where}: no_new_privs`);
  };

  it('an exec command holds none of them, and no process in the sandbox has ambient capabilities', async () => {
    const own = await api.exec(id, { argv: ['cat', '/proc/self/status'] });
    withoutForbidden(own.stdout, 'exec');
    const all = await api.exec(id, {
      cmd: 'grep -h -E "^(CapAmb|NoNewPrivs)" /proc/[0-9]*/status | sort | uniq -c',
    });
    assert.doesNotMatch(all.stdout, /CapAmb:\s*0*[1-9a-f]/, all.stdout);
    assert.doesNotMatch(all.stdout, /NoNewPrivs:\s*0/, all.stdout);
  });

  it('the Node.js REPL holds none of them either, and may not make a user namespace', async () => {
    const r = await api.runCode(id, {
      language: 'node',
      code: "console.log(require('fs').readFileSync('/proc/self/status', 'utf8'))",
    });
    assert.equal(r.ok, true, JSON.stringify(r.error));
    withoutForbidden(r.stdout, 'the Node REPL');
    const u = await api.runCode(id, {
      language: 'node',
      code: "require('child_process').spawnSync('unshare', ['-U', 'true']).status",
    });
    assert.notEqual(u.value, '0', 'unshare -U from the Node REPL');
  });

  it('REPL code cannot hand the worker’s capabilities to a program it runs', async () => {
    const r = await replPython<{ worker: string; capset: string; ambient: string; child: string }>(
      api,
      id,
      [
        'import ctypes, errno, json, subprocess',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'def en():',
        '    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))',
        'class Hdr(ctypes.Structure): _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]',
        'class Data(ctypes.Structure): _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]',
        'hdr, data = Hdr(0x20080522, 0), (Data * 2)()',
        'libc.capget(ctypes.byref(hdr), data)',
        `data[0].inheritable |= (1 << ${CAP.SYS_ADMIN}) | (1 << ${CAP.NET_ADMIN}) | (1 << ${CAP.SYS_CHROOT})`,
        'capset = "ok" if libc.capset(ctypes.byref(hdr), data) == 0 else en()',
        'PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE = 47, 2',
        `ambient = "ok" if libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, ${CAP.SYS_ADMIN}, 0, 0) == 0 else en()`,
        'child = subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True).stdout',
        'print(json.dumps({"worker": open("/proc/self/status").read(), "capset": capset, "ambient": ambient, "child": child}))',
      ].join('\n'),
    );
    // The worker holds none of them either: it forks into user namespaces of the children's own.
    withoutForbidden(r.worker, 'the REPL worker');
    assert.equal(r.capset, 'EPERM', 'raising them into the inheritable set is refused');
    assert.equal(r.ambient, 'EPERM', 'raising CAP_SYS_ADMIN into the ambient set is refused');
    withoutForbidden(r.child, 'REPL subprocess');
  });

  it("root in the sandbox is its block's first host uid, and every process of the sandbox runs in that block", async () => {
    const base = blockBase(fx, id);
    assert.ok(base >= UID_SPACE_START, `block ${base} is in forkbox's uid space`);
    const marker = token('caps');
    const ex = await api.startExec(id, { argv: ['sh', '-c', 'sleep 3600; true', marker] });
    try {
      const [pid] = await waitFor('the marker process on the host', () => {
        const pids = hostPidsWith(marker);
        return pids.length > 0 && pids;
      });
      const pids = sandboxHostPids(pid ?? 0, id);
      assert.ok(pids.length >= 3, `agent, REPL worker and the marker: ${pids}`);
      for (const p of pids) {
        const status = readFileSync(`/proc/${p}/status`, 'utf8');
        for (const line of ['Uid', 'Gid']) {
          const ids = (new RegExp(`^${line}:\\s+(.*)$`, 'm').exec(status)?.[1] ?? '')
            .split(/\s+/)
            .map(Number);
          assert.equal(ids.length, 4);
          for (const n of ids) assert.ok(n >= base && n < base + 65536, `host pid ${p}: ${line} ${ids}`);
        }
        assert.match(
          status,
          new RegExp(`^Uid:\\s+${base}\\s`, 'm'),
          `host pid ${p} is sandbox root = host ${base}`,
        );
      }
    } finally {
      await api.cancelExec(id, ex.id);
    }
  });
});
