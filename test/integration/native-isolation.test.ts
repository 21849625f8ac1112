/**
 * Isolation of native sandboxes, each claim against the real runtime: host files and processes,
 * other sandboxes, the host's loopback, uid mapping, /proc, capabilities, and symlink planting.
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { sandboxProcs } from '../helpers/cgroup-files.ts';
import {
  blockBase,
  type NativeFixture,
  nativeUnavailable,
  openNative,
  UID_SPACE_START,
} from '../helpers/native.ts';

const skip = nativeUnavailable();

describe('native sandbox isolation', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let a: string;
  let b: string;
  const sh = async (id: string, cmd: string) => api.exec(id, { cmd, timeoutSeconds: 20 });

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    a = (await api.createSandbox({ name: 'iso-a' })).id;
    b = (await api.createSandbox({ name: 'iso-b' })).id;
  });
  after(async () => {
    await fx?.close();
  });

  it('cannot see host files', async () => {
    const r = await sh(
      a,
      `test -e ${process.cwd()}/package.json && echo visible; ls -A /root; test -e ${fx.stateDir} && echo state`,
    );
    assert.doesNotMatch(r.stdout, /visible|state/);
    assert.doesNotMatch(r.stdout, /\.npm|\.pyenv/, 'the host /root is not the sandbox /root');
  });

  it('cannot see host processes or other sandboxes’ processes', async () => {
    await api.startExec(b, { argv: ['sleep', '4242'] });
    const r = await sh(a, 'ps -eo pid,comm --no-headers');
    const procs = r.stdout.trim().split('\n');
    assert.ok(procs.length <= 6, `only the sandbox's own processes: ${r.stdout}`);
    assert.doesNotMatch(r.stdout, /node|sleep|runc|systemd/);
    assert.match(r.stdout, /^\s*1 python3/m, 'the agent is PID 1');
  });

  it('cannot see other sandboxes’ files, /dev/shm or terminals', async () => {
    await sh(a, 'echo secret > /tmp/a-file; echo shm > /dev/shm/a-shm');
    await api.runCode(a, { code: 'import os\n_pty = os.openpty()' });
    const ptysA = (await sh(a, 'ls /dev/pts')).stdout;
    assert.match(ptysA, /\b0\b/, 'a has a pty');
    const r = await sh(b, 'cat /tmp/a-file; ls /dev/shm; ls /dev/pts');
    assert.doesNotMatch(r.stdout, /secret|a-shm/);
    assert.equal(r.stdout.trim(), 'ptmx', 'b sees only its own (empty) devpts');
  });

  it('cannot reach a TCP server on the host loopback', async () => {
    const server = net.createServer((s) => s.end('hello from host\n'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const r = await sh(
        a,
        `python3 -c "import socket; s=socket.create_connection(('127.0.0.1', ${port}), timeout=2); print(s.recv(100))"`,
      );
      assert.notEqual(r.exitCode, 0);
      assert.match(r.stderr, /Connection refused|timed out|unreachable/);
      assert.doesNotMatch(r.stdout, /hello from host/);
    } finally {
      server.close();
    }
  });

  it('is root inside but an unprivileged uid on the host', async () => {
    assert.equal((await sh(a, 'id -u')).stdout.trim(), '0');
    await api.runCode(a, { code: '1' }); // the REPL worker is forked off PID 1 when first needed
    const pids = sandboxProcs(fx.stateDir, a);
    assert.ok(pids.length >= 2, 'agent and REPL worker are in the sandbox cgroup');
    const base = blockBase(fx, a);
    assert.ok(base >= UID_SPACE_START, `its block ${base} is in forkbox's uid space, far from host users`);
    for (const pid of pids) {
      const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
      assert.equal(uid, String(base), `host pid ${pid} runs as its block's first uid ${base}`);
    }
  });

  it('cannot write /proc/sysrq-trigger or read /proc/kcore', async () => {
    const r = await sh(
      a,
      'echo h > /proc/sysrq-trigger; echo rc1=$?; head -c 16 /proc/kcore > /dev/null; echo rc2=$?',
    );
    assert.match(r.stdout, /rc1=[1-9]/);
    assert.match(r.stdout, /rc2=[1-9]/);
  });

  it('runs commands without CAP_SYS_ADMIN and with no ambient capabilities anywhere', async () => {
    const m = await sh(a, 'mkdir -p /mnt/x && mount -t tmpfs none /mnt/x; echo rc=$?');
    assert.match(m.stdout, /rc=[1-9]/);
    const caps = await sh(
      a,
      'grep -h CapBnd /proc/self/status; grep -h CapAmb /proc/[0-9]*/status | sort -u',
    );
    const bnd = BigInt(`0x${/CapBnd:\s*([0-9a-f]+)/.exec(caps.stdout)?.[1] ?? '0'}`);
    assert.equal(bnd & (1n << 21n), 0n, 'CAP_SYS_ADMIN dropped from the bounding set');
    assert.equal(bnd & (1n << 12n), 0n, 'CAP_NET_ADMIN dropped');
    const amb = caps.stdout.split('\n').filter((l) => l.startsWith('CapAmb'));
    assert.deepEqual([...new Set(amb)], ['CapAmb:\t0000000000000000']);
    const nnp = await sh(a, 'grep NoNewPrivs /proc/self/status');
    assert.match(nnp.stdout, /NoNewPrivs:\s*1/);
  });

  it('drops malformed, oversized or impostor control-socket traffic from a sandbox and keeps serving', async () => {
    const script = [
      'import socket, struct, json',
      // The host checks SO_PEERCRED at accept and closes a connection that is not from the agent before
      // reading anything: the send may then fail (EPIPE/ECONNRESET); either way nothing is answered.
      'def send(data):',
      '    s = socket.socket(socket.AF_UNIX); s.settimeout(5)',
      '    try:',
      '        s.connect("/.forkbox/inbox/ctl.sock"); s.sendall(data); r = s.recv(100)',
      '    except (BrokenPipeError, ConnectionResetError): r = b""',
      '    except Exception as e: r = repr(e).encode()',
      '    print(repr(r)); s.close()',
      'send(b"\\xff" * 64)',
      'send(struct.pack(">II", 1 << 30, 0))',
      "hello = json.dumps({'t': 'hello', 'v': 1, 'role': 'sandbox', 'sandbox_id': '" +
        '__ID__' +
        "', 'nonce': '', 'agent_version': 'x', 'worker_pid': None, 'reconnect': True}).encode()",
      'send(struct.pack(">II", len(hello), 0) + hello)',
    ].join('\n');
    const r = await api.exec(a, { argv: ['python3', '-c', script.replace('__ID__', a)], timeoutSeconds: 30 });
    assert.equal(r.exitCode, 0, r.stderr);
    // Each connection is closed by the host without an answer (b'' = EOF or a reset), never welcomed.
    assert.deepEqual(r.stdout.trim().split('\n'), ["b''", "b''", "b''"]);
    assert.ok(
      fx.log.lines.some((l) => /connection\(s\) refused/.test(l) && /not the sandbox's PID 1/.test(l)),
      'the host logged the refusal',
    );
    // The real agents of both sandboxes are still connected and served.
    assert.equal((await sh(a, 'echo alive')).stdout, 'alive\n');
    assert.equal((await sh(b, 'echo alive')).stdout, 'alive\n');
  });

  it('has a seccomp allow list: risky system calls fail, nested user namespaces are refused', async () => {
    const script = [
      'import ctypes, errno',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'def call(nr, *args):',
      '    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])',
      '    return errno.errorcode.get(ctypes.get_errno(), "ok") if r == -1 else "ok"',
      // x86_64 numbers: io_uring_setup 425, bpf 321, keyctl 250, userfaultfd 323, perf_event_open 298,
      // unshare 272 (CLONE_NEWUSER = 0x10000000), kexec_load 246
      'print(call(425, 1, 0), call(321, 0, 0, 0), call(250, 0), call(323, 0), call(298, 0, 0, 0, 0, 0), call(246, 0, 0, 0, 0))',
      'print(call(272, 0x10000000))',
    ].join('\n');
    const r = await api.exec(a, { argv: ['python3', '-c', script] });
    assert.equal(r.exitCode, 0, r.stderr);
    const [risky, userns] = r.stdout.trim().split('\n');
    assert.equal(risky, 'ENOSYS ENOSYS ENOSYS ENOSYS ENOSYS ENOSYS');
    assert.equal(userns, 'EPERM');
    const seccomp = await sh(a, 'grep Seccomp: /proc/self/status');
    assert.match(seccomp.stdout, /Seccomp:\s*2/);
    // Ordinary work still runs under the filter: threads, subprocesses, sockets, git.
    const work = await sh(
      a,
      'python3 -c \'import threading, subprocess, socket; t = threading.Thread(target=print, args=(1,)); t.start(); t.join(); s = socket.socket(); s.close(); print(subprocess.run(["true"]).returncode)\' && git --version >/dev/null && echo fine',
    );
    assert.equal(work.stdout, '1\n0\nfine\n', work.stderr);
  });

  it('cannot plant a symlink where the host chmods, chowns or mounts', async () => {
    const before = statSync('/etc/passwd');
    const r = await sh(
      a,
      'ln -s /etc/passwd /.forkbox/inbox/evil; echo rc1=$?; rm -f /.forkbox/inbox/ctl.sock; echo rc2=$?; ln -sf /etc/passwd /.forkbox/inbox/ctl.sock; echo rc3=$?; touch /.forkbox/bin/x; echo rc4=$?',
    );
    assert.match(r.stdout, /rc1=[1-9]/);
    assert.match(r.stdout, /rc2=[1-9]/);
    assert.match(r.stdout, /rc3=[1-9]/);
    assert.match(r.stdout, /rc4=[1-9]/);
    // The sandbox keeps working through its control socket, and the host file is untouched.
    assert.equal((await sh(a, 'true')).exitCode, 0);
    const after = statSync('/etc/passwd');
    assert.equal(after.mode, before.mode);
    assert.equal(after.uid, before.uid);
  });
});
