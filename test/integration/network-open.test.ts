/**
 * Network policy `open` (real runtime, daemon capped at `open`): a sandbox gets its own user-mode NAT
 * (slirp4netns) and fetches from the test hosts by IP with curl, with no proxy; a fork child gets its own
 * NAT and can too, and so does a snapshot restore (the snapshot's paused holder has none); the policy shows on the sandbox; a kill leaves no NAT process; a daemon capped at `allow`
 * refuses `open`; after a daemon restart a recovered `open` sandbox gets a new NAT. The test hosts live in a network namespace this test makes, on documentation addresses
 * (test/helpers/test-hosts.ts); nothing else is connected to.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openEngine } from '../../src/composition.ts';
import { isForkboxError } from '../../src/domain/errors.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { parseNetworkCap } from '../../src/service/sandboxes/network-cap.ts';
import {
  blockBase,
  makeStateDir,
  type NativeFixture,
  nativeUnavailable,
  openNative,
  quietLog,
} from '../helpers/native.ts';
import { natProcesses } from '../helpers/slirp.ts';
import {
  HOST_SIDE,
  PORT,
  SERVER_A,
  SERVER_B,
  startTestHosts,
  type TestHosts,
} from '../helpers/test-hosts.ts';
import { waitFor } from '../helpers/wait-for.ts';

const skip = nativeUnavailable();
const BODY = 'open road\n';

/** The sandbox's tap0 address (SIOCGIFADDR), its default gateway (/proc/net/route) and HTTP_PROXY. */
const IFACE = `
import fcntl, json, os, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
addr = socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", b"tap0"))[20:24])
gw = None
for line in open("/proc/net/route").read().splitlines()[1:]:
    f = line.split()
    if f[1] == "00000000" and f[0] == "tap0":
        gw = socket.inet_ntoa(struct.pack("<I", int(f[2], 16)))
print(json.dumps({"tap0": addr, "gateway": gw, "proxy": os.environ.get("HTTP_PROXY")}))
`;

const fetchArgv = (addr: string) => ['curl', '-sS', '--max-time', '15', `http://${addr}:${PORT}/hello.txt`];

describe('network open: full egress through a per-sandbox user-mode NAT', { skip: skip ?? false }, () => {
  let hosts: TestHosts | undefined;
  let fx: NativeFixture | undefined;
  let api: ForkboxApi;
  let sb = '';
  before(async () => {
    hosts = await startTestHosts();
    writeFileSync(join(hosts.dir, 'hello.txt'), BODY);
    fx = await openNative({ networkCap: parseNetworkCap('open', undefined) });
    api = fx.opened.api;
    sb = (await api.createSandbox({ name: 'open', network: 'open' })).id;
  });
  after(async () => {
    await fx?.close();
    hosts?.close();
  });

  it('shows the policy, and has an interface of its own with no proxy variables', async () => {
    assert.equal((await api.getSandbox(sb)).network, 'open');
    const r = await api.exec(sb, { argv: ['python3', '-c', IFACE] });
    assert.deepEqual(
      JSON.parse(r.stdout || '{}'),
      { tap0: '10.0.2.100', gateway: '10.0.2.2', proxy: null },
      r.stderr,
    );
  });

  it('fetches from both test hosts by IP, through its own NAT', async () => {
    for (const addr of [SERVER_A, SERVER_B]) {
      const r = await api.exec(sb, { argv: fetchArgv(addr) });
      assert.equal(r.stdout, BODY, `${addr}: ${r.stderr}`);
    }
    // The NAT's sockets are host sockets: the server saw the host's side of the test veth.
    assert.deepEqual([...new Set(hosts?.clients())].sort(), [HOST_SIDE, '203.0.113.1']);
    const nats = natProcesses();
    assert.equal(nats.length, 1);
    assert.ok(fx);
    assert.equal(nats[0]?.uid, blockBase(fx, sb), "the NAT runs as its sandbox's root host uid");
  });

  it('a fork child has its own NAT and fetches too; killing it stops only its NAT', async () => {
    const fork = await api.forkSandbox(sb, { n: 1 });
    const child = fork.children[0]?.sandbox?.id;
    assert.ok(child, JSON.stringify(fork.children));
    assert.equal((await api.getSandbox(child)).network, 'open');
    assert.equal(natProcesses().length, 2);
    const r = await api.exec(child, { argv: fetchArgv(SERVER_B) });
    assert.equal(r.stdout, BODY, r.stderr);
    await api.killSandbox(child);
    assert.equal(natProcesses().length, 1, 'the source keeps its NAT');
    const again = await api.exec(sb, { argv: fetchArgv(SERVER_A) });
    assert.equal(again.stdout, BODY, again.stderr);
  });

  it('a snapshot keeps no NAT of its own; a restore gets its own and fetches', async () => {
    const snap = await api.createSnapshot(sb, { name: 'open-snap' });
    assert.equal(natProcesses().length, 1, "the snapshot's paused holder has no NAT");
    const restored = await api.restoreSnapshot(snap.id, { n: 1 });
    const child = restored.children[0]?.sandbox?.id;
    assert.ok(child, JSON.stringify(restored.children));
    assert.equal((await api.getSandbox(child)).network, 'open');
    assert.equal(natProcesses().length, 2);
    const r = await api.exec(child, { argv: fetchArgv(SERVER_A) });
    assert.equal(r.stdout, BODY, r.stderr);
    await api.killSandbox(child);
    assert.equal(natProcesses().length, 1);
  });

  it('a kill leaves no NAT process', async () => {
    const pids = natProcesses().map((p) => p.pid);
    assert.equal(pids.length, 1);
    await api.killSandbox(sb);
    await waitFor(() => natProcesses().length === 0, { what: 'no slirp4netns left' });
    for (const pid of pids) assert.throws(() => process.kill(pid, 0), 'the NAT process is gone');
  });

  it('a daemon capped at allow refuses open with permission_denied', async () => {
    const capped = await openNative({ networkCap: parseNetworkCap('allow', undefined) });
    try {
      await assert.rejects(
        capped.opened.api.createSandbox({ name: 'o', network: 'open' }),
        (e) => isForkboxError(e) && e.code === 'permission_denied' && /--network-max open/.test(e.message),
      );
      assert.equal(natProcesses().length, 0);
    } finally {
      await capped.close();
    }
  });
});

describe('network open: a daemon restart', { skip: skip ?? false }, () => {
  it('starts a new NAT for a recovered open sandbox, which fetches again', async () => {
    const hosts = await startTestHosts();
    writeFileSync(join(hosts.dir, 'hello.txt'), BODY);
    const stateDir = makeStateDir();
    const cap = parseNetworkCap('open', undefined);
    let opened = await openEngine({ stateDir, log: quietLog(), reapIntervalMs: 0, networkCap: cap });
    try {
      const { id } = await opened.api.createSandbox({ network: 'open', persistent: true });
      const before = natProcesses().map((p) => p.pid);
      assert.equal(before.length, 1);
      await opened.close({ killSandboxes: false }); // the daemon goes; the sandbox stays, its NAT goes
      assert.deepEqual(natProcesses(), [], 'the NAT does not outlive the daemon');
      opened = await openEngine({ stateDir, log: quietLog(), reapIntervalMs: 0, networkCap: cap });
      const after = natProcesses();
      assert.equal(after.length, 1);
      assert.notEqual(after[0]?.pid, before[0]);
      const r = await opened.api.exec(id, { argv: fetchArgv(SERVER_A) });
      assert.equal(r.stdout, BODY, r.stderr);
    } finally {
      await opened.close({ killSandboxes: true });
      rmSync(stateDir, { recursive: true, force: true });
      hosts.close();
    }
    assert.deepEqual(natProcesses(), []);
  });
});
