/**
 * Attack: reaching what an `open` sandbox must not, as its root, through its user-mode NAT (slirp4netns):
 * the host's loopback through slirp's gateway 10.0.2.2, the host's own uplink address and its side of a
 * veth, the cloud metadata address 169.254.169.254, and a private 10.x address — directly, then again after
 * changing the sandbox's own addresses and routes (refused: nothing in a sandbox holds CAP_NET_ADMIN) —
 * and taking over the NAT itself, which parses every packet the sandbox sends.
 * Precedent: SSRF to the metadata service (Capital One 2019); slirp4netns's gateway forwarding to the
 * host's 127.0.0.1 (why rootless runtimes default to `--disable-host-loopback`, e.g. Podman's
 * `allow_host_loopback=false`); memory-safety bugs in libslirp reachable from the guest (CVE-2020-1983,
 * CVE-2021-3592..3595), which make the NAT process itself the thing to contain.
 * Contained when: the test hosts answer (the NAT works), every other target fails and the host listeners
 * see no connection, address and route changes change nothing, and the NAT runs as the sandboxes' root
 * host uid with no capability but CAP_NET_BIND_SERVICE (CapEff ≤ 0x400), no new privileges and seccomp.
 * Nothing but the test hosts is ever reached: the host filter drops the rest (3 s connect timeouts).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { parseNetworkCap } from '../../src/service/sandboxes/network-cap.ts';
import { execPython, replPython } from '../helpers/attacks.ts';
import { blockBase, type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import { natProcesses } from '../helpers/slirp.ts';
import {
  HOST_SIDE,
  PORT,
  SERVER_A,
  SERVER_B,
  startTestHosts,
  type TestHosts,
} from '../helpers/test-hosts.ts';

const skip = nativeUnavailable();

/** The host's own non-loopback IPv4 addresses outside the test ranges (its uplink). */
function uplink(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((l) => l ?? [])
    .filter((i) => i.family === 'IPv4' && !i.internal && !/^(198\.51\.100|203\.0\.113)\./.test(i.address))
    .map((i) => i.address);
}

/** argv[1]: JSON [[host, port], ...]: direct TCP connects at once (3 s each); `host:port` → outcome. */
const CONNECT = `
import json, socket, sys, threading
res = {}
def go(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, port))
        res["%s:%d" % (host, port)] = "CONNECTED"
    except OSError as e:
        res["%s:%d" % (host, port)] = "failed: %s" % e
    finally:
        s.close()
ts = [threading.Thread(target=go, args=(h, p)) for h, p in json.loads(sys.argv[1])]
for t in ts: t.start()
for t in ts: t.join()
print(json.dumps(res))
`;

/**
 * Root rewires its own network: an alias address on tap0 in the uplink's subnet (SIOCSIFADDR on tap0:9),
 * on-link routes on tap0 (SIOCADDRT) for the uplink's /24, link-local and 10/8; then the CONNECT above.
 */
const REWIRE = `
import ctypes, fcntl, json, socket, struct, sys
def sa(ip):
    return struct.pack("HH4s8x", socket.AF_INET, 0, socket.inet_aton(ip))
res = {}
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    fcntl.ioctl(s.fileno(), 0x8916, struct.pack("16s", b"tap0:9") + sa(sys.argv[2]) + b"\\0" * 8)
    res["addr"] = "added"
except OSError as e:
    res["addr"] = "refused: %s" % e
dev = ctypes.create_string_buffer(b"tap0")
for net, mask in json.loads(sys.argv[3]):
    rt = struct.pack("L16s16s16sHhLPhPLLH", 0, sa(net), sa("0.0.0.0"), sa(mask), 1, 0, 0, 0, 0,
                     ctypes.addressof(dev), 0, 0, 0)
    rt += b"\\0" * (120 - len(rt))
    try:
        fcntl.ioctl(s.fileno(), 0x890B, rt)
        res["route " + net] = "added"
    except OSError as e:
        res["route " + net] = "refused: %s" % e
print(json.dumps(res))
`;

describe('network open: escaping the NAT', { skip: skip ?? false }, () => {
  let hosts: TestHosts | undefined;
  let fx: NativeFixture | undefined;
  let api: ForkboxApi;
  let id = '';
  let listener: Server;
  let port = 0;
  let seen = 0;
  before(async () => {
    hosts = await startTestHosts();
    writeFileSync(join(hosts.dir, 'hello.txt'), 'ok\n');
    // One host listener on every address: what the sandbox must not reach (loopback, uplink, veth side).
    listener = createServer((s) => {
      seen += 1;
      s.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '0.0.0.0', resolve));
    const a = listener.address();
    port = typeof a === 'object' && a ? a.port : 0;
    fx = await openNative({ networkCap: parseNetworkCap('open', undefined) });
    api = fx.opened.api;
    id = (await api.createSandbox({ name: 'escape', network: 'open' })).id;
  });
  after(async () => {
    await fx?.close();
    hosts?.close();
    listener.close();
  });

  const refusedTargets = (): [string, number][] => [
    ['10.0.2.2', port], // slirp's gateway: the host's 127.0.0.1 unless --disable-host-loopback
    ...uplink().map((a): [string, number] => [a, port]), // the host's uplink (192.0.2.2 here)
    [HOST_SIDE, port], // the host's side of the test veth: a local address too
    ['169.254.169.254', 80], // cloud metadata
    ['10.1.2.3', 80], // a private address
  ];

  function check(res: Record<string, string>, where: string): void {
    assert.equal(res[`${SERVER_A}:${PORT}`], 'CONNECTED', `${where}: the NAT works (${JSON.stringify(res)})`);
    assert.equal(res[`${SERVER_B}:${PORT}`], 'CONNECTED', where);
    for (const [h, p] of refusedTargets())
      assert.match(
        res[`${h}:${p}`] ?? 'missing',
        /^failed: /,
        `${where}: ${h}:${p} (${JSON.stringify(res)})`,
      );
  }

  it('reaches the test hosts and nothing else, from commands and the REPL', async () => {
    assert.ok(uplink().length > 0, 'the host has an uplink address');
    const targets = JSON.stringify([[SERVER_A, PORT], [SERVER_B, PORT], ...refusedTargets()]);
    check(await execPython<Record<string, string>>(api, id, CONNECT, [targets]), 'exec');
    check(await replPython<Record<string, string>>(api, id, CONNECT, [targets]), 'REPL');
    assert.equal(seen, 0, 'no host listener saw a connection');
  });

  it("root's address and route changes inside do not help", async () => {
    const up = uplink()[0] ?? '192.0.2.2';
    const alias = `${up.split('.').slice(0, 3).join('.')}.250`;
    const routes = JSON.stringify([
      [`${up.split('.').slice(0, 3).join('.')}.0`, '255.255.255.0'],
      ['169.254.0.0', '255.255.0.0'],
      ['10.0.0.0', '255.0.0.0'],
    ]);
    // Nothing in the sandbox holds CAP_NET_ADMIN (a new sandbox drops it once set up): the REPL cannot
    // rewire its network namespace, and the NAT has to hold regardless.
    const done = await replPython<Record<string, string>>(api, id, REWIRE, ['', alias, routes]);
    for (const [what, outcome] of Object.entries(done))
      assert.match(outcome, /Operation not permitted/, `${what}: ${JSON.stringify(done)}`);
    const targets = JSON.stringify([[SERVER_A, PORT], [SERVER_B, PORT], ...refusedTargets()]);
    check(await execPython<Record<string, string>>(api, id, CONNECT, [targets]), 'exec after rewiring');
    check(await replPython<Record<string, string>>(api, id, CONNECT, [targets]), 'REPL after rewiring');
    assert.equal(seen, 0, 'no host listener saw a connection');
  });

  it("the NAT runs as its sandbox's root uid with CapEff at most CAP_NET_BIND_SERVICE, seccomp, no new privileges", () => {
    const nats = natProcesses();
    assert.equal(nats.length, 1);
    const nat = nats[0];
    assert.ok(nat && fx);
    assert.equal(nat.uid, blockBase(fx, id));
    assert.equal(nat.capEff & ~0x400, 0, `CapEff ${nat.capEff.toString(16)}`);
    const status = readFileSync(`/proc/${nat.pid}/status`, 'utf8');
    assert.match(status, /^NoNewPrivs:\s+1$/m);
    assert.match(status, /^Seccomp:\s+2$/m);
    assert.match(status, /^CapAmb:\s+0+$/m);
  });
});
