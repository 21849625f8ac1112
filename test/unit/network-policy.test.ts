/** Network policies: the wire form, the daemon's cap, and which addresses the egress proxy refuses. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isForkboxError } from '../../src/domain/errors.ts';
import { formatNetwork, hostAllowed, parseNetwork } from '../../src/domain/network.ts';
import { cidrContains, refusal } from '../../src/network/addresses.ts';
import { checkTarget } from '../../src/network/egress-proxy.ts';
import { readGreeting, readRequest, SOCKS_REP } from '../../src/network/egress-socks.ts';
import { networkFor, parseNetworkCap } from '../../src/service/sandboxes/network-cap.ts';

describe('network policy', () => {
  it('parses and formats the wire form', () => {
    const p = parseNetwork('allow: Files.Example.org, *.cdn.example.org,198.51.100.0/24,2001:db8::1');
    assert.deepEqual(p.hosts, ['files.example.org', '*.cdn.example.org']);
    assert.deepEqual(p.cidrs, ['198.51.100.0/24', '2001:db8::1/128']);
    assert.equal(formatNetwork(parseNetwork(formatNetwork(p))), formatNetwork(p));
    assert.equal(formatNetwork(parseNetwork('none')), 'none');
    assert.equal(formatNetwork(parseNetwork(' open ')), 'open');
    for (const bad of [
      '',
      'open:x',
      'allow:',
      'allow:a b',
      'allow:*.org',
      'allow:1.2.3.4/33',
      'allow:-x.org',
      'allow:1.2.3',
    ])
      assert.throws(
        () => parseNetwork(bad),
        (e) => isForkboxError(e) && e.code === 'invalid_argument',
        bad,
      );
  });

  it('wildcards match names below the suffix, not the suffix itself', () => {
    assert.ok(hostAllowed(['*.example.org'], 'a.example.org'));
    assert.ok(!hostAllowed(['*.example.org'], 'example.org'));
    assert.ok(!hostAllowed(['*.example.org'], 'badexample.org'));
    assert.ok(!hostAllowed(['files.example.org'], 'files.example.org.evil.test'));
  });

  it("the daemon's cap: none refuses allow; an allow list must stay within --network-allow", () => {
    const denied = (e: unknown) => isForkboxError(e) && e.code === 'permission_denied';
    assert.throws(() => networkFor(parseNetworkCap('none', undefined), 'allow:a.org'), denied);
    assert.equal(networkFor(parseNetworkCap('none', undefined), 'none').mode, 'none');
    const cap = parseNetworkCap('allow', '*.example.org,files.test,198.51.100.0/24');
    assert.equal(
      networkFor(cap, 'allow:a.example.org,*.b.example.org,files.test,198.51.100.7').mode,
      'allow',
    );
    assert.throws(() => networkFor(cap, 'allow:example.org'), denied);
    assert.throws(() => networkFor(cap, 'allow:other.test'), denied);
    assert.throws(() => networkFor(cap, 'allow:198.51.0.0/16'), denied);
    assert.throws(() => parseNetworkCap('wide', undefined), /'none', 'allow' or 'open'/);
  });

  it('open needs --network-max open and a host filter in place, else permission_denied naming what is missing', () => {
    const denied = (re: RegExp) => (e: unknown) =>
      isForkboxError(e) && e.code === 'permission_denied' && re.test(e.message);
    assert.throws(() => networkFor(parseNetworkCap(undefined, undefined), 'open'), denied(/up to 'allow'/));
    assert.throws(() => networkFor(parseNetworkCap('none', undefined), 'open'), denied(/no network/));
    const missing = { ...parseNetworkCap('open', undefined), openMissing: "'nft' is not installed" };
    assert.throws(() => networkFor(missing, 'open'), denied(/'nft' is not installed/));
    assert.equal(networkFor(missing, 'allow:a.org').mode, 'allow');
    assert.equal(networkFor(parseNetworkCap('open', undefined), 'open').mode, 'open');
  });

  it('refuses loopback, link-local, mapped and private addresses unless a CIDR names the private ones', () => {
    for (const a of [
      '127.0.0.1',
      '::1',
      '169.254.169.254',
      '::ffff:169.254.169.254',
      '::ffff:7f00:1',
      '0.0.0.0',
      'fe80::1',
      '224.0.0.1',
    ])
      assert.notEqual(refusal(a, ['0.0.0.0/0', '::/0'], false), null, a);
    assert.notEqual(refusal('10.1.2.3', [], false), null);
    assert.equal(refusal('10.1.2.3', ['10.0.0.0/8'], false), null);
    assert.notEqual(refusal('fd00::5', [], false), null);
    assert.equal(refusal('203.0.113.9', [], false), null);
    assert.notEqual(refusal('203.0.113.9', [], true), null, 'a literal needs a CIDR');
    assert.ok(cidrContains('198.51.100.0/24', '198.51.100.128/25'));
    assert.ok(!cidrContains('198.51.100.0/25', '198.51.100.0/24'));
  });

  it('a name is refused when any of its addresses is', async () => {
    const policy = parseNetwork('allow:files.test');
    const map: Record<string, string[]> = { 'files.test': ['203.0.113.2', '127.0.0.1'] };
    const v = await checkTarget(policy, { host: 'files.test', port: 80 }, async (n) => map[n] ?? []);
    assert.ok('refused' in v);
    map['files.test'] = ['203.0.113.2'];
    assert.deepEqual(await checkTarget(policy, { host: 'files.test', port: 80 }, async (n) => map[n] ?? []), {
      addr: '203.0.113.2',
    });
  });

  it('reads SOCKS5 greetings and requests, a byte at a time or all at once', () => {
    const b = (...x: number[]) => Buffer.from(x);
    assert.equal(readGreeting(b(5)), 'more');
    assert.equal(readGreeting(b(5, 2, 0)), 'more');
    assert.deepEqual(readGreeting(b(5, 2, 2, 0, 9)), { noAuth: true, used: 4 });
    assert.deepEqual(readGreeting(b(5, 1, 2)), { noAuth: false, used: 3 });
    assert.ok('malformed' in Object(readGreeting(b(5, 0))));
    const name = Buffer.from('files.test');
    const req = Buffer.concat([b(5, 1, 0, 3, name.length), name, b(0x1f, 0x90)]);
    for (let i = 0; i < req.length; i++) assert.equal(readRequest(req.subarray(0, i)), 'more');
    assert.deepEqual(readRequest(Buffer.concat([req, b(1, 2)])), {
      target: { host: 'files.test', port: 8080 },
      used: req.length,
    });
    assert.deepEqual(readRequest(b(5, 1, 0, 1, 127, 0, 0, 1, 0, 80)), {
      target: { host: '127.0.0.1', port: 80 },
      used: 10,
    });
    const v6 = readRequest(b(5, 1, 0, 4, ...Array(15).fill(0), 1, 0, 80));
    assert.ok(typeof v6 === 'object' && 'target' in v6 && refusal(v6.target.host, [], true) !== null);
    assert.deepEqual(readRequest(b(5, 2, 0, 1, 1, 2, 3, 4, 0, 80)), {
      unsupported: SOCKS_REP.commandNotSupported,
      why: 'only the SOCKS5 CONNECT command',
      target: { host: '1.2.3.4', port: 80 },
    });
    assert.equal(Object(readRequest(b(5, 1, 0, 9, 0))).unsupported, SOCKS_REP.addressTypeNotSupported);
    assert.ok('malformed' in Object(readRequest(b(4, 1, 0, 1, 0))));
    assert.ok('malformed' in Object(readRequest(b(5, 1, 0, 3, 0, 0, 80))));
    assert.ok('malformed' in Object(readRequest(b(5, 1, 0, 3, 2, 0x0a, 0x41, 0, 80))));
  });
});
