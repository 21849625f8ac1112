/**
 * Attack: network egress — TCP to a public address, to every address of the host (and a TCP server
 * this test runs on the host, on all of them), UDP DNS to a public resolver and to the host's own,
 * name resolution, and the cloud metadata address 169.254.169.254, from an exec and from the REPL
 * (whose worker holds CAP_NET_ADMIN in the sandbox's user namespace).
 * Precedent: sandbox-runtime tests "block DNS lookups when allowedDomains is empty" and "enforce network
 * restrictions across protocols and ports"; Firecracker "filter egress on host" (peers 6b #10).
 * Contained when: every attempt fails, the host server sees no connection (while the host itself can
 * reach it), and the sandbox has no interface but `lo`.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { networkInterfaces } from 'node:os';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { bothPython } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();

/** argv[1]: JSON [[host, port], ...] for TCP; argv[2]: JSON [resolver, ...] for UDP DNS. */
const PROBE = `
import json, socket, sys
tcp, udp = json.loads(sys.argv[1]), json.loads(sys.argv[2])
res = {}
for host, port in tcp:
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, port))
        res["tcp %s %d" % (host, port)] = "CONNECTED"
    except OSError as e:
        res["tcp %s %d" % (host, port)] = "refused: %s" % e
    finally:
        s.close()
query = b"\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01"
for resolver in udp:
    u = socket.socket(socket.AF_INET6 if ":" in resolver else socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(3)
    try:
        u.sendto(query, (resolver, 53))
        u.recvfrom(512)
        res["udp " + resolver] = "ANSWERED"
    except OSError as e:
        res["udp " + resolver] = "refused: %s" % e
    finally:
        u.close()
try:
    res["resolve"] = "RESOLVED %s" % (socket.getaddrinfo("example.com", 443)[0][4],)
except OSError as e:
    res["resolve"] = "refused: %s" % e
res["interfaces"] = sorted(name for _, name in socket.if_nameindex())
print(json.dumps(res))
`;

/** Every address of the host (link-local ones need a scope and are only reachable on-link anyway). */
function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((list) => list ?? [])
    .map((a) => a.address)
    .filter((a) => !a.toLowerCase().startsWith('fe80:'));
}

function hostResolvers(): string[] {
  try {
    return [...readFileSync('/etc/resolv.conf', 'utf8').matchAll(/^nameserver\s+(\S+)/gm)]
      .map((m) => m[1] ?? '')
      .filter((a) => a !== '' && !a.includes('%'));
  } catch {
    return [];
  }
}

describe('abuse: network egress', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id: string;
  let server: net.Server;
  let port = 0;
  let connections = 0;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    id = (await api.createSandbox({})).id;
    server = net.createServer((s) => {
      connections++;
      s.on('error', () => undefined); // a prober that resets is fine
      s.end('hello from the host\n');
    });
    // '::' with dual stack: every IPv4 and IPv6 address of the host.
    await new Promise<void>((r) => server.listen({ port: 0, host: '::', ipv6Only: false }, r));
    port = (server.address() as net.AddressInfo).port;
  });
  after(async () => {
    server?.close();
    await fx?.close();
  });

  it('the host server is reachable from the host itself (so a refusal below means something)', async () => {
    for (const address of hostAddresses()) {
      await new Promise<void>((resolve, reject) => {
        const s = net.connect({ host: address, port }, () => {
          s.destroy();
          resolve();
        });
        s.on('error', reject);
      });
    }
    assert.ok(connections >= hostAddresses().length);
  });

  it('no TCP, UDP or DNS leaves the sandbox, from an exec or the REPL; only lo exists', async () => {
    const addresses = hostAddresses();
    assert.ok(
      addresses.some((a) => !a.startsWith('127.') && a !== '::1'),
      'the host has a non-loopback address',
    );
    const tcp = [
      ['1.1.1.1', 443],
      ['8.8.8.8', 53],
      ['169.254.169.254', 80],
      ['2606:4700:4700::1111', 443],
      ...addresses.map((a) => [a, port]),
    ];
    const udp = ['8.8.8.8', '1.1.1.1', ...hostResolvers()];
    const before = connections;
    const r = await bothPython<Record<string, string | string[]>>(api, id, PROBE, [
      JSON.stringify(tcp),
      JSON.stringify(udp),
    ]);
    for (const [where, res] of Object.entries(r)) {
      for (const [target, outcome] of Object.entries(res)) {
        if (target === 'interfaces') continue;
        assert.match(String(outcome), /^refused: /, `${where}: ${target} → ${outcome}`);
      }
      assert.equal(Object.keys(res).length, tcp.length + udp.length + 2, `${where}: every target was tried`);
      assert.deepEqual(res.interfaces, ['lo'], `${where}: only the loopback interface`);
    }
    assert.equal(connections, before, 'the host server saw no connection from the sandbox');
    const dev = await api.exec(id, { cmd: "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '" });
    assert.equal(dev.stdout, 'lo\n');
  });
});
