/**
 * Attack: escaping an `allow` network policy from inside the sandbox, as its root — unsetting the proxy
 * variables and connecting directly, adding a default route and an address (refused: nothing in a
 * sandbox holds CAP_NET_ADMIN once it is set up), looking for another interface, replacing the proxy's
 * socket in the inbox, and crafting requests to the proxy itself (IP literals in other spellings,
 * userinfo tricks, a Host header naming another host, a trailing-dot name), and malformed, oversized,
 * unsupported or stalled SOCKS5 handshakes on the same port.
 * Precedent: proxy-based egress filters bypassed by clients that ignore HTTP_PROXY (sandbox-runtime's
 * "network restrictions across protocols"), SSRF filter bypasses by alternative IP spellings and
 * `user@host` URLs (CWE-918 class; e.g. CVE-2021-22931-style parser confusion), DNS rebinding to the
 * metadata address (Capital One 2019), SOCKS servers crashed or exhausted by malformed handshakes
 * (CWE-20/CWE-400 class; e.g. Dante's and 3proxy's handshake parsing advisories).
 * Contained when: nothing connects but through the proxy, the proxy refuses all but the listed name, the
 * test server sees connections only from the proxy, and the inbox cannot be written.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { bothPython, execPython, replPython } from '../helpers/attacks.ts';
import { egressSuite } from '../helpers/egress-suite.ts';
import { nativeUnavailable } from '../helpers/native.ts';
import { HOST_SIDE, PORT, SERVER_A, SERVER_B } from '../helpers/test-hosts.ts';

const skip = nativeUnavailable();

/** argv[1]: JSON [[host, port], ...]: direct TCP connects, ignoring any proxy. */
const DIRECT = `
import json, socket, sys
res = {}
for host, port in json.loads(sys.argv[1]):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, port))
        res[host] = "CONNECTED"
    except OSError as e:
        res[host] = "refused: %s" % e
    finally:
        s.close()
res["interfaces"] = sorted(name for _, name in socket.if_nameindex())
print(json.dumps(res))
`;

/** Root in the sandbox: a default route via lo (SIOCADDRT) and a test-range address on lo, then connect. */
const REROUTE = `
import ctypes, fcntl, json, socket, struct, sys
def sa(ip):
    return struct.pack("HH4s8x", socket.AF_INET, 0, socket.inet_aton(ip))
res = {}
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    fcntl.ioctl(s.fileno(), 0x8916, struct.pack("16s", b"lo:9") + sa("198.51.100.9") + b"\\0" * 8)  # SIOCSIFADDR
    res["addr"] = "added"
except OSError as e:
    res["addr"] = "refused: %s" % e
dev = ctypes.create_string_buffer(b"lo")
rt = struct.pack("L16s16s16sHhLPhPLLH", 0, sa("0.0.0.0"), sa("0.0.0.0"), sa("0.0.0.0"), 1, 0, 0, 0, 0,
                 ctypes.addressof(dev), 0, 0, 0)
rt += b"\\0" * (120 - len(rt))
try:
    fcntl.ioctl(s.fileno(), 0x890B, rt)  # SIOCADDRT: default dev lo
    res["route"] = "added"
except OSError as e:
    res["route"] = "refused: %s" % e
c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
c.settimeout(3)
try:
    c.connect((sys.argv[1], int(sys.argv[2])))
    res["connect"] = "CONNECTED"
except OSError as e:
    res["connect"] = "refused: %s" % e
print(json.dumps(res))
`;

/** Raw requests to the proxy's socket: argv[1] JSON list of request heads; each answer's status line. */
const RAW = `
import json, socket, sys
res = []
for head in json.loads(sys.argv[1]):
    u = socket.socket(socket.AF_UNIX)
    u.settimeout(10)
    u.connect("/.forkbox/inbox/net.sock")
    u.sendall(head.encode())
    data = b""
    while b"\\r\\n" not in data:
        chunk = u.recv(4096)
        if not chunk:
            break
        data += chunk
    res.append(data.split(b"\\r\\n")[0].decode())
    u.close()
print(json.dumps(res))
`;

/**
 * SOCKS5 handshakes on the relay port: argv[1] JSON [[hex bytes to send, n junk bytes after them], ...];
 * for each, the bytes the proxy answered (hex) and whether it then closed ("eof") or kept waiting.
 */
const SOCKS_RAW = `
import json, socket, sys
out = []
for hexed, junk in json.loads(sys.argv[1]):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
    try:
        s.sendall(bytes.fromhex(hexed) + b"A" * junk)
    except OSError:
        pass
    data, end = b"", "open"
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                end = "eof"
                break
            data += chunk
    except socket.timeout:
        pass
    except OSError:
        end = "eof"
    s.close()
    out.append([data.hex(), end])
print(json.dumps(out))
`;

describe('abuse: escaping an allow network policy', { skip: skip ?? false }, () => {
  const egress = egressSuite({ hostsMap: `files.test=${SERVER_A};other.test=${SERVER_B}`, hello: 'hi\n' });
  let api: ForkboxApi;
  let id: string;

  before(async () => {
    api = egress.api;
    id = (await api.createSandbox({ network: 'allow:files.test' })).id;
  });

  it('the allowed name works through the proxy (so the refusals below mean something)', async () => {
    const r = await api.exec(id, {
      argv: ['curl', '-sS', '--max-time', '15', `http://files.test:${PORT}/hello.txt`],
    });
    assert.equal(r.stdout, 'hi\n', r.stderr);
  });

  it('without the proxy variables nothing connects, and lo is the only interface', async () => {
    const targets = [
      [SERVER_A, PORT],
      [SERVER_B, PORT],
      [HOST_SIDE, PORT],
      ['169.254.169.254', 80],
    ];
    const r = await bothPython<Record<string, unknown>>(api, id, DIRECT, [JSON.stringify(targets)]);
    for (const res of [r.exec, r.repl]) {
      for (const [host] of targets) assert.match(String(res[String(host)]), /^refused/, JSON.stringify(res));
      assert.deepEqual(res.interfaces, ['lo']);
    }
    const curl = await api.exec(id, {
      cmd: `env -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY -u ALL_PROXY -u all_proxy curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://${SERVER_A}:${PORT}/hello.txt`,
    });
    assert.equal(curl.stdout, '000');
  });

  it('a default route and a test-range address added by root reach nothing', async () => {
    // No CAP_NET_ADMIN in the REPL (nor anywhere in the sandbox): the route is refused, the connect fails.
    const r = await replPython<Record<string, string>>(api, id, REROUTE, [SERVER_A, String(PORT)]);
    assert.notEqual(r.route, 'added', JSON.stringify(r));
    assert.match(r.connect ?? '', /^refused/, JSON.stringify(r));
    // And from a command too (the ioctls are refused, the connect fails).
    const e = await execPython<Record<string, string>>(api, id, REROUTE, [SERVER_A, String(PORT)]);
    assert.match(e.connect ?? '', /^refused/, JSON.stringify(e));
  });

  it('the proxy socket in the inbox cannot be removed or shadowed', async () => {
    const r = await api.exec(id, {
      cmd: 'rm -f /.forkbox/inbox/net.sock; echo rm=$?; mv /.forkbox/inbox/net.sock /tmp/x 2>/dev/null; echo mv=$?; touch /.forkbox/inbox/evil 2>/dev/null; echo touch=$?; test -S /.forkbox/inbox/net.sock && echo present',
    });
    assert.equal(r.stdout, 'rm=1\nmv=1\ntouch=1\npresent\n', r.stderr);
  });

  it('crafted requests to the proxy are refused unless they name the listed host', async () => {
    const heads = [
      `CONNECT 127.0.0.1:${PORT} HTTP/1.1\r\n\r\n`,
      `CONNECT [::1]:${PORT} HTTP/1.1\r\n\r\n`,
      `CONNECT [::ffff:127.0.0.1]:${PORT} HTTP/1.1\r\n\r\n`,
      `CONNECT [::ffff:${SERVER_A}]:${PORT} HTTP/1.1\r\n\r\n`,
      `CONNECT 0x7f000001:${PORT} HTTP/1.1\r\n\r\n`,
      `CONNECT 2130706433:${PORT} HTTP/1.1\r\n\r\n`,
      `CONNECT files.test.:${PORT} HTTP/1.1\r\n\r\n`,
      `CONNECT other.test:${PORT} HTTP/1.1\r\nHost: files.test\r\n\r\n`,
      `GET http://files.test@other.test:${PORT}/ HTTP/1.1\r\nHost: files.test\r\n\r\n`,
      `GET http://files.test:${PORT}@169.254.169.254/ HTTP/1.1\r\n\r\n`,
      `GET https://files.test:${PORT}/ HTTP/1.1\r\n\r\n`,
      `GET /hello.txt HTTP/1.1\r\nHost: files.test:${PORT}\r\n\r\n`,
      `CONNECT files.test:0 HTTP/1.1\r\n\r\n`,
      `CONNECT files.test:${PORT} HTTP/2.0\r\n\r\n`,
    ];
    const answers = await execPython<string[]>(api, id, RAW, [JSON.stringify(heads)]);
    assert.equal(answers.length, heads.length);
    for (const [i, a] of answers.entries())
      assert.equal(a, 'HTTP/1.1 403 Forbidden', `${JSON.stringify(heads[i])} -> ${a}`);
    // A Host header naming another host does not move a request off the listed one.
    const [ok] = await execPython<string[]>(api, id, RAW, [
      JSON.stringify([`GET http://files.test:${PORT}/hello.txt HTTP/1.1\r\nHost: other.test\r\n\r\n`]),
    ]);
    assert.equal(ok, 'HTTP/1.0 200 OK');
    // Only the proxy ever connected to the test hosts.
    assert.deepEqual([...new Set(egress.hosts.clients())], [HOST_SIDE]);
  });

  it('malformed, oversized, unsupported and stalled SOCKS5 handshakes are answered and closed', async () => {
    const files = Buffer.from('files.test').toString('hex');
    const port = PORT.toString(16).padStart(4, '0');
    const ok = '050100';
    // "No authentication" chosen, then a reply: 05 REP 00 01 0.0.0.0:0.
    const rep = (code: string) => `050005${code}0001000000000000`;
    const cases: [string, string][] = [
      ['0500', '05ff'], // no methods at all
      ['050102', '05ff'], // only username/password offered
      [`${ok}04010001c6336402${port}`, rep('01')], // a request with the wrong version
      [`${ok}05010003000050`, rep('01')], // an empty domain name
      [`${ok}0501000308${Buffer.from('files\r\nx').toString('hex')}${port}`, rep('01')], // control bytes
      [`${ok}050200030a${files}${port}`, rep('07')], // BIND
      [`${ok}050300030a${files}${port}`, rep('07')], // UDP ASSOCIATE
      [`${ok}05010009${files}`, rep('08')], // an unknown address type
      [`05ff${'01'.repeat(255)}`, '05ff'], // 255 methods, then 1 MiB of junk
      [`0401${port}c633640200`, ''], // SOCKS4: not spoken, closed without a word
      ['0501', ''], // a stalled greeting: closed when the handshake time runs out
    ];
    const answers = await execPython<[string, string][]>(
      api,
      id,
      SOCKS_RAW,
      [JSON.stringify(cases.map(([send]) => [send, send.startsWith('05ff') ? 1 << 20 : 0]))],
      120,
    );
    for (const [i, [got, end]] of answers.entries()) {
      const [sent, want] = cases[i] ?? ['', ''];
      assert.equal(got, want, `${sent.slice(0, 40)} -> ${got}`);
      assert.equal(end, 'eof', `${sent.slice(0, 40)} left open`);
    }
    // The proxy still serves the listed name over SOCKS5, and only it ever reached the test hosts.
    const r = await api.exec(id, {
      argv: [
        'curl',
        '-sS',
        '--max-time',
        '15',
        '--socks5-hostname',
        '127.0.0.1:3128',
        `http://files.test:${PORT}/hello.txt`,
      ],
    });
    assert.equal(r.stdout, 'hi\n', r.stderr);
    assert.deepEqual([...new Set(egress.hosts.clients())], [HOST_SIDE]);
  });
});
