/**
 * Attack: one sandbox reaching another — a TCP server on 127.0.0.1 and an abstract Unix socket in one
 * sandbox, its files in /tmp and /dev/shm, its System V shared memory, its terminals and its processes,
 * probed from a second sandbox; and from fork children: a child probing its parent and its sibling.
 * Precedent: sandbox-runtime "should isolate PID namespace" (peers 6b #8); Firecracker
 * `network-for-clones.md` (clones must not share a network, peers 6b #19).
 * Contained when: the probing sandbox reaches and sees none of it (while the owner itself does: the
 * controls), and a fork child sees neither its parent's nor its sibling's processes, servers or memory.
 * (A parent seeing its children is by design: a fork tree is one trust domain, docs/SECURITY.md.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { execPython, token, waitFor } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();
const PORT = 8765;

/** A TCP server on 127.0.0.1:PORT and an abstract Unix server `\0<argv[1]>`, both answering argv[1]. */
const SERVE = `
import socket, sys, threading
name = sys.argv[1]
def serve(s):
    while True:
        c, _ = s.accept()
        c.sendall(name.encode())
        c.close()
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); t.bind(("127.0.0.1", ${PORT})); t.listen()
u = socket.socket(socket.AF_UNIX); u.bind("\\0" + name); u.listen()
threading.Thread(target=serve, args=(u,), daemon=True).start()
serve(t)
`;

/** What a sandbox can see or reach of `argv[1]` (the other side's name). */
const PROBE = `
import json, os, socket, subprocess, sys
name = sys.argv[1]
res = {}
for kind, addr, fam in (("tcp", ("127.0.0.1", ${PORT}), socket.AF_INET), ("abstract", "\\0" + name, socket.AF_UNIX)):
    s = socket.socket(fam); s.settimeout(3)
    try:
        s.connect(addr); res[kind] = "CONNECTED " + s.recv(100).decode()
    except OSError as e:
        res[kind] = "refused: %s" % e
    s.close()
procs = []
for p in os.listdir("/proc"):
    if p.isdigit() and int(p) != os.getpid():
        try:
            procs.append(open("/proc/%s/cmdline" % p, "rb").read().decode(errors="replace"))
        except OSError:
            pass
res["sees_process"] = any(name in c for c in procs)
res["sees_tmp"] = os.path.exists("/tmp/" + name)
res["sees_shm"] = os.path.exists("/dev/shm/" + name)
res["pts"] = sorted(os.listdir("/dev/pts"))
res["sysv_shm"] = subprocess.run(["ipcs", "-m"], capture_output=True, text=True).stdout.count("0x")
res["in_unix_table"] = name in open("/proc/net/unix").read()
print(json.dumps(res))
`;

interface Probe {
  tcp: string;
  abstract: string;
  sees_process: boolean;
  sees_tmp: boolean;
  sees_shm: boolean;
  pts: string[];
  sysv_shm: number;
  in_unix_table: boolean;
}

describe('abuse: sandbox to sandbox', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
  });
  after(async () => {
    await fx?.close();
  });

  /** Give sandbox `id` a server, a process, files, shared memory and a terminal, all named `name`. */
  async function occupy(id: string, name: string): Promise<void> {
    await api.startExec(id, { argv: ['python3', '-c', SERVE, name] });
    await api.startExec(id, { argv: ['sh', '-c', 'sleep 3600; true', name] });
    const r = await api.exec(id, {
      cmd: `echo secret > /tmp/${name}; echo secret > /dev/shm/${name}; ipcmk -M 4096`,
    });
    assert.equal(r.exitCode, 0, r.stderr);
    await api.runCode(id, { code: 'import os\n_pty = os.openpty()' });
    // The owner itself reaches and sees everything (so a refusal elsewhere means something).
    await waitFor(`${name}'s server to listen`, async () => {
      const own = await execPython<Probe>(api, id, PROBE, [name]);
      return own.tcp === `CONNECTED ${name}` && own.abstract === `CONNECTED ${name}` && own;
    }).then((own) => {
      assert.equal(own.sees_process && own.sees_tmp && own.sees_shm && own.in_unix_table, true);
      assert.ok(own.pts.includes('0') && own.sysv_shm >= 1, JSON.stringify(own));
    });
  }

  const reachesNothing = (p: Probe, who: string) => {
    assert.match(p.tcp, /^refused: /, `${who}: tcp → ${p.tcp}`);
    assert.match(p.abstract, /^refused: /, `${who}: abstract socket → ${p.abstract}`);
    assert.equal(p.sees_process, false, `${who}: sees the other's process`);
    assert.equal(p.sees_tmp, false, `${who}: sees the other's /tmp`);
    assert.equal(p.sees_shm, false, `${who}: sees the other's /dev/shm`);
    assert.equal(p.in_unix_table, false, `${who}: sees the other's abstract socket`);
    assert.equal(p.sysv_shm, 0, `${who}: sees System V shared memory`);
  };

  it('a sandbox reaches nothing of another: server, socket, process, files, shm, terminals', async () => {
    const a = (await api.createSandbox({ name: 'victim' })).id;
    const b = (await api.createSandbox({ name: 'prober' })).id;
    const name = token('victim');
    await occupy(a, name);
    const p = await execPython<Probe>(api, b, PROBE, [name]);
    reachesNothing(p, 'another sandbox');
    assert.deepEqual(p.pts, ['ptmx'], 'only its own (empty) devpts');
  });

  it('a fork child reaches nothing of its parent or its sibling', async () => {
    const parent = (await api.createSandbox({ name: 'parent' })).id;
    const pName = token('parent');
    await occupy(parent, pName);
    const fork = await api.forkSandbox(parent, { n: 2 });
    const [c1, c2] = fork.children.map((c) => c.sandbox?.id ?? assert.fail(JSON.stringify(c.error)));
    assert.ok(c1 && c2);
    // Files are inherited by design (a fork copies the filesystem); /dev/shm, processes and sockets are not.
    const fromChild = await execPython<Probe>(api, c1, PROBE, [pName]);
    reachesNothing({ ...fromChild, sees_tmp: false }, 'child → parent');
    assert.equal(fromChild.sees_tmp, true, 'the child has its own copy of the parent’s files');
    const sName = token('sibling');
    await occupy(c1, sName);
    reachesNothing(await execPython<Probe>(api, c2, PROBE, [sName]), 'child → sibling');
  });
});
