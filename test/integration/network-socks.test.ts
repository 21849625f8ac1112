/**
 * Network policy `allow` over SOCKS5 (real runtime): the same relay port speaks SOCKS5 (RFC 1928, no
 * authentication, CONNECT), with the same allow list, the same address refusals, the same counts and
 * audit lines as HTTP CONNECT. `curl --socks5-hostname` and `ALL_PROXY=socks5h://…` reach the listed
 * test host; every refused target gets reply 0x02 ("connection not allowed by ruleset"), by name, by
 * IPv4 and by IPv6 literal. Test hosts: test/helpers/test-hosts.ts (documentation addresses only).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { execPython } from '../helpers/attacks.ts';
import { egressSandboxSuite } from '../helpers/egress-suite.ts';
import { nativeUnavailable } from '../helpers/native.ts';
import { HOST_SIDE, PORT, SERVER_A, SERVER_B } from '../helpers/test-hosts.ts';

const skip = nativeUnavailable();

const HOSTS_MAP = `files.test=${SERVER_A};other.test=${SERVER_B};meta.test=169.254.169.254;self.test=${HOST_SIDE};loop.test=127.0.0.1`;
// gone.test is listed but not in the map: it does not resolve.
const POLICY = 'allow:files.test,meta.test,self.test,loop.test,gone.test';
const BODY = 'socks and sandals\n';

/**
 * A SOCKS5 client on the relay port: argv[1] JSON [[atyp, host, port], ...]; for each, the request
 * reply's code, and with `fetch` the first line of an HTTP answer through the opened tunnel.
 */
const SOCKS = `
import ipaddress, json, socket, struct, sys
out = []
for atyp, host, port in json.loads(sys.argv[1]):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(b"\\x05\\x01\\x00")
    assert s.recv(2) == b"\\x05\\x00"
    if atyp == 3:
        addr = bytes([len(host)]) + host.encode()
    else:
        addr = ipaddress.ip_address(host).packed
    s.sendall(b"\\x05\\x01\\x00" + bytes([atyp]) + addr + struct.pack(">H", port))
    rep = b""
    while len(rep) < 10:
        chunk = s.recv(10 - len(rep))
        if not chunk:
            break
        rep += chunk
    res = {"rep": rep[1] if len(rep) > 1 else None}
    if res["rep"] == 0:
        s.sendall(b"GET /hello.txt HTTP/1.0\\r\\nHost: x\\r\\n\\r\\n")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        res["status"] = data.split(b"\\r\\n")[0].decode()
        res["body"] = data.split(b"\\r\\n\\r\\n", 1)[-1].decode()
    s.close()
    out.append(res)
print(json.dumps(out))
`;

describe('network allow: SOCKS5 through the filtering proxy', { skip: skip ?? false }, () => {
  const egress = egressSandboxSuite({
    hostsMap: HOSTS_MAP,
    hello: BODY,
    sandbox: { name: 'socks', network: POLICY },
  });
  const { audit } = egress;
  let api: ForkboxApi;
  let sb: string;
  before(() => {
    ({ api, sb } = egress);
  });

  it('ALL_PROXY names the relay port as SOCKS5 with remote names', async () => {
    const r = await api.exec(sb, { cmd: 'echo "$ALL_PROXY $all_proxy $HTTP_PROXY"' });
    assert.equal(r.stdout, 'socks5h://127.0.0.1:3128 socks5h://127.0.0.1:3128 http://127.0.0.1:3128\n');
  });

  it('curl --socks5-hostname and ALL_PROXY=socks5h reach the allowed name', async () => {
    const url = `http://files.test:${PORT}/hello.txt`;
    const flag = await api.exec(sb, {
      argv: ['curl', '-sS', '--max-time', '15', '--socks5-hostname', '127.0.0.1:3128', url],
    });
    assert.equal(flag.stdout, BODY, flag.stderr);
    const env = await api.exec(sb, {
      cmd: `env -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY curl -sS --max-time 15 ${url}`,
    });
    assert.equal(env.stdout, BODY, env.stderr);
    const raw = await execPython<{ rep: number; status?: string; body?: string }[]>(api, sb, SOCKS, [
      JSON.stringify([[3, 'files.test', PORT]]),
    ]);
    assert.deepEqual(raw, [{ rep: 0, status: 'HTTP/1.0 200 OK', body: BODY }]);
    assert.deepEqual([...new Set(egress.hosts.clients())], [HOST_SIDE]);
  });

  it('refuses names off the list, refused addresses by name or literal, and the host itself (0x02)', async () => {
    const before = egress.fx.opened.metrics.read().egress.refused;
    const refused: [number, string, number][] = [
      [3, 'other.test', PORT], // a test host not on the list
      [1, SERVER_A, PORT], // an allowed host by IPv4 literal (no CIDR names it)
      [3, SERVER_A, PORT], // ... and as a "domain" spelled as a literal
      [1, '127.0.0.1', PORT], // the host's loopback
      [4, '::1', PORT], // ... over IPv6
      [4, `::ffff:${SERVER_A}`, PORT], // an IPv4-mapped IPv6 literal
      [1, HOST_SIDE, PORT], // the host's own address
      [1, '169.254.169.254', 80], // the metadata address
      [3, 'meta.test', PORT], // allowed name resolving to the metadata address
      [3, 'self.test', PORT], // ... to the host's own address
      [3, 'loop.test', PORT], // ... to loopback
      [3, 'nowhere.test', PORT], // not listed
    ];
    const reps = await execPython<{ rep: number }[]>(api, sb, SOCKS, [JSON.stringify(refused)]);
    assert.equal(reps.length, refused.length);
    for (const [i, r] of reps.entries()) assert.equal(r.rep, 0x02, JSON.stringify(refused[i]));
    // A listed name with no address: host unreachable (0x04).
    const gone = await execPython<{ rep: number }[]>(api, sb, SOCKS, [
      JSON.stringify([[3, 'gone.test', 80]]),
    ]);
    assert.deepEqual(gone, [{ rep: 0x04 }]);
    // curl exits with CURLE_PROXY (97), naming the reply code the proxy gave.
    const c = await api.exec(sb, {
      argv: [
        'curl',
        '-sS',
        '--max-time',
        '15',
        '--socks5-hostname',
        '127.0.0.1:3128',
        `http://other.test:${PORT}/`,
      ],
    });
    assert.equal(c.exitCode, 97, c.stderr);
    assert.match(c.stderr, /SOCKS5 connection to other\.test\. \(2\)/);
    const counts = egress.fx.opened.metrics.read().egress;
    assert.ok(counts.refused - before >= refused.length + 2, JSON.stringify(counts));
    const lines = audit.lines.filter((l) => l.door === 'egress' && l.sandbox === sb);
    assert.ok(lines.some((l) => l.host === 'other.test' && l.port === PORT && l.outcome === 'refused'));
    assert.ok(lines.some((l) => l.host === '169.254.169.254' && l.outcome === 'refused'));
    assert.ok(lines.some((l) => l.host === 'files.test' && l.outcome === 'accepted'));
  });

  it('a connect refused by the destination is reply 0x05, and a CIDR allows a literal', async () => {
    const c = (await api.createSandbox({ network: `allow:${SERVER_B}/32` })).id;
    const reps = await execPython<{ rep: number; status?: string }[]>(api, c, SOCKS, [
      JSON.stringify([
        [1, SERVER_B, PORT],
        [1, SERVER_B, PORT + 1],
        [1, SERVER_A, PORT],
      ]),
    ]);
    assert.deepEqual(
      reps.map((r) => [r.rep, r.status]),
      [
        [0, 'HTTP/1.0 200 OK'],
        [0x05, undefined],
        [0x02, undefined],
      ],
    );
    await api.killSandbox(c);
  });
});
