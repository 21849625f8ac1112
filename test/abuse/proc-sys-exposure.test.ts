/**
 * Attack: reading and writing the host through /proc and /sys — list host processes, open /proc/kcore,
 * /proc/kmsg and the kpage* files, write /proc/sysrq-trigger, write host sysctls under /proc/sys (the
 * `core_pattern` and `modprobe` container escapes, drop_caches), write /sys, and reach a writable
 * cgroupfs — from an exec and from the REPL (CAP_SYS_ADMIN in the sandbox's user namespace: it may mount
 * a fresh proc and try to remount /sys read-write).
 * Precedent: sandbox-runtime "should isolate PID namespace"; Sysbox masking /proc/sys (peers 6b #8);
 * the `core_pattern` escape (CVE-2019-5736-era container breakouts write it to run code on the host).
 * Contained when: no host process appears (a marker process the test starts on the host is not listed,
 * even in a proc the REPL mounts itself), every sensitive file that exists on the host is refused, every
 * write fails and the host's values are unchanged, /sys stays read-only and no cgroup fs can be mounted.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { bothPython, token } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();

/** Root-only or kernel-memory files of /proc: opening any of them must fail. */
const SENSITIVE_READ = [
  '/proc/kcore',
  '/proc/kmsg',
  '/proc/kpageflags',
  '/proc/kpagecount',
  '/proc/kpagecgroup',
];
/** Host-global files whose write would change the host. */
const HOST_WRITES: Record<string, string> = {
  '/proc/sysrq-trigger': 'h',
  '/proc/sys/kernel/core_pattern': '|/tmp/forkbox-abuse-core %p',
  '/proc/sys/kernel/modprobe': '/tmp/forkbox-abuse-modprobe',
  '/proc/sys/vm/drop_caches': '1',
  '/proc/sys/kernel/panic': '1234',
  '/proc/sys/fs/file-max': '4242',
  '/sys/kernel/mm/transparent_hugepage/enabled': 'never',
  '/sys/kernel/uevent_helper': '/tmp/forkbox-abuse-uevent',
};

const SCRIPT = `
import ctypes, errno, json, os, sys
marker = sys.argv[1]
reads, writes = json.loads(sys.argv[2]), json.loads(sys.argv[3])
libc = ctypes.CDLL(None, use_errno=True)
def en(e):
    return errno.errorcode.get(e, str(e))
def cmdlines(proc):
    out = []
    for p in os.listdir(proc):
        if p.isdigit() and int(p) != os.getpid():  # our own argv carries the marker
            try:
                out.append(open("%s/%s/cmdline" % (proc, p), "rb").read().decode(errors="replace"))
            except OSError:
                pass
    return out
res = {"sees_marker": any(marker in c for c in cmdlines("/proc")), "nprocs": len(cmdlines("/proc"))}
os.makedirs("/tmp/p2", exist_ok=True)
if libc.mount(b"proc", b"/tmp/p2", b"proc", 0, None) == 0:
    res["fresh_proc_sees_marker"] = any(marker in c for c in cmdlines("/tmp/p2"))
    libc.umount2(b"/tmp/p2", 2)
for path in reads:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
        res["read " + path] = "OPENED"
    except OSError as e:
        res["read " + path] = en(e.errno)
if libc.mount(None, b"/sys", None, 0x20, None) == 0:
    res["remount /sys rw (informational)"] = "ok"
for path, value in writes.items():
    try:
        with open(path, "w") as f:
            f.write(value)
        res["write " + path] = "WROTE"
    except OSError as e:
        res["write " + path] = en(e.errno)
os.makedirs("/tmp/cg", exist_ok=True)
for fs, opts in (("cgroup2", None), ("cgroup", b"pids"), ("cgroup", b"memory")):
    ctypes.set_errno(0)
    rc = libc.mount(b"none", b"/tmp/cg", fs.encode(), 0, opts)
    res["mount %s %s" % (fs, opts)] = "MOUNTED" if rc == 0 else en(ctypes.get_errno())
    if rc == 0:
        libc.umount2(b"/tmp/cg", 2)
res["cgroup mounts"] = [l for l in open("/proc/self/mountinfo") if " - cgroup" in l]
try:
    os.mkdir("/sys/fs/cgroup/forkbox-abuse")
    res["mkdir in /sys/fs/cgroup"] = "MADE"
except OSError as e:
    res["mkdir in /sys/fs/cgroup"] = en(e.errno)
print(json.dumps(res))
`;

describe('abuse: /proc and /sys', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id: string;
  let hostProc: ChildProcess;
  const marker = token('host-proc');

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    id = (await api.createSandbox({})).id;
    // A host process with a unique command line, for the sandbox to look for.
    hostProc = spawn('/bin/sh', ['-c', 'sleep 3600; true', marker], { stdio: 'ignore' });
  });
  after(async () => {
    hostProc?.kill('SIGKILL');
    await fx?.close();
  });

  it('sees no host process, refuses sensitive files and host writes, from an exec and the REPL', async () => {
    assert.ok(readFileSync(`/proc/${hostProc.pid}/cmdline`, 'utf8').includes(marker), 'the host marker runs');
    const reads = SENSITIVE_READ.filter((p) => existsSync(p));
    const writes = Object.fromEntries(Object.entries(HOST_WRITES).filter(([p]) => existsSync(p)));
    assert.ok(reads.length >= 2, `sensitive /proc files on this host: ${reads.join(' ')}`);
    assert.ok(Object.keys(writes).length >= 4, `host-global files on this host: ${Object.keys(writes)}`);
    const hostBefore = Object.fromEntries(Object.keys(writes).map((p) => [p, safeRead(p)]));

    const r = await bothPython<Record<string, unknown>>(api, id, SCRIPT, [
      marker,
      JSON.stringify(reads),
      JSON.stringify(writes),
    ]);
    for (const [where, res] of Object.entries(r)) {
      assert.equal(res.sees_marker, false, `${where}: a host process is visible`);
      assert.ok((res.nprocs as number) < 10, `${where}: only the sandbox's processes (${res.nprocs})`);
      assert.notEqual(res.fresh_proc_sees_marker, true, `${where}: a fresh proc shows a host process`);
      for (const p of reads)
        assert.match(String(res[`read ${p}`]), /^(EACCES|EPERM|ENOENT)$/, `${where}: ${p}`);
      for (const p of Object.keys(writes))
        assert.match(String(res[`write ${p}`]), /^(EACCES|EPERM|EROFS|ENOENT)$/, `${where}: ${p}`);
      for (const k of ['mount cgroup2 None', "mount cgroup b'pids'", "mount cgroup b'memory'"])
        assert.match(String(res[k]), /^(EPERM|EACCES|EBUSY)$/, `${where}: ${k} → ${res[k]}`);
      assert.deepEqual(res['cgroup mounts'], [], `${where}: no cgroup fs inside`);
      assert.match(String(res['mkdir in /sys/fs/cgroup']), /^(EROFS|EACCES|EPERM|ENOENT)$/, where);
    }
    // Nothing in the sandbox holds CAP_SYS_ADMIN: neither a command nor the REPL mounts a proc at all.
    for (const [where, res] of Object.entries(r))
      assert.equal(res.fresh_proc_sees_marker, undefined, `${where} mounted a proc`);
    for (const [p, v] of Object.entries(hostBefore)) assert.equal(safeRead(p), v, `host ${p} unchanged`);
  });

  it('/sys is mounted read-only and /proc/1 is the sandbox’s agent', async () => {
    const r = await api.exec(id, {
      cmd: `awk '$5 == "/sys" { print $6 }' /proc/self/mountinfo; tr '\\0' ' ' < /proc/1/cmdline`,
    });
    const [sys, init] = r.stdout.split('\n');
    assert.match(sys ?? '', /^ro,/);
    assert.match(init ?? '', /agent\.py/);
  });
});

function safeRead(p: string): string {
  try {
    return readFileSync(p, 'utf8');
  } catch (e) {
    return `unreadable: ${(e as NodeJS.ErrnoException).code}`;
  }
}
