import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { registryBaseUrl } from '../../src/images/registry/http.ts';
import { refusal } from '../../src/network/addresses.ts';
import { REFUSED_V4 } from '../../src/network/open-filter.ts';
import { isLoopbackHost as guardsLoopback } from '../../src/protocol/http/guards.ts';
import { addressRanges, isLoopbackHost, rangeOf, refusedV4 } from '../../src/util/address-ranges.ts';
import { cidrContains } from '../../src/util/cidr.ts';

describe('one address-range table and one loopback check', () => {
  it('calls loopback only localhost and literals in 127/8 or ::1', () => {
    const yes = ['localhost', 'LOCALHOST', '127.0.0.1', '127.255.255.254', '::1', '[::1]', '0:0:0:0:0:0:0:1'];
    yes.push('::ffff:127.0.0.1', '[::ffff:127.9.8.7]', '::ffff:7f00:1');
    for (const h of yes) assert.ok(isLoopbackHost(h), h);
    const no = ['127.attacker.example', '127.0.0.1.nip.io', 'localhost.attacker.example', 'xlocalhost'];
    no.push('0.0.0.0', '::', '[::]', '128.0.0.1', '126.255.255.255', '::2', '::ffff:10.0.0.1', '127.1', '');
    no.push('10.0.0.1', '198.18.0.1', '100.64.0.1', 'example.com', '[127.0.0.1]x');
    for (const h of no) assert.ok(!isLoopbackHost(h), h);
    assert.equal(guardsLoopback, isLoopbackHost, 'the listener guards use the same check');
  });

  it('fetches only loopback registries over plain HTTP unless listed insecure', () => {
    assert.equal(registryBaseUrl('127.0.0.1:5000', []), 'http://127.0.0.1:5000');
    assert.equal(registryBaseUrl('[::1]:5000', []), 'http://[::1]:5000');
    assert.equal(registryBaseUrl('localhost:5000', []), 'http://localhost:5000');
    assert.equal(registryBaseUrl('127.attacker.example', []), 'https://127.attacker.example');
    assert.equal(registryBaseUrl('127.attacker.example:5000', []), 'https://127.attacker.example:5000');
    assert.equal(registryBaseUrl('0.0.0.0:5000', []), 'https://0.0.0.0:5000');
    assert.equal(registryBaseUrl('reg.internal:5000', ['reg.internal:5000']), 'http://reg.internal:5000');
  });

  it('classifies the edge ranges', () => {
    const kinds: [string, string | null][] = [
      ['0.0.0.0', 'unspecified'],
      ['198.18.0.1', 'benchmarking'],
      ['198.19.255.255', 'benchmarking'],
      ['198.20.0.1', null],
      ['100.64.0.1', 'shared'],
      ['100.127.255.255', 'shared'],
      ['100.128.0.1', null],
      ['::ffff:169.254.169.254', 'link-local'],
      ['::ffff:198.18.0.1', 'benchmarking'],
      ['169.254.169.254', 'link-local'],
      ['255.255.255.255', 'reserved'],
      ['fd00::1', 'unique-local'],
      ['64:ff9b::a00:1', 'nat64'],
      ['8.8.8.8', null],
      ['198.51.100.7', null],
      ['not-an-address', null],
    ];
    for (const [addr, kind] of kinds) assert.equal(rangeOf(addr)?.kind ?? null, kind, addr);
  });

  it('the allow proxy and the open filter refuse the same IPv4 ranges', () => {
    assert.deepEqual([...REFUSED_V4], refusedV4());
    for (const r of addressRanges()) {
      const first = r.cidr.split('/')[0] ?? '';
      const host = r.cidr.includes(':') ? first : first.replace(/\.0$/, '.1');
      assert.ok(refusal(host, [], false) !== null, `${host} (${r.kind}) refused by the allow proxy`);
      if (!r.cidr.includes(':'))
        assert.ok(
          REFUSED_V4.some((c) => cidrContains(c, `${host}/32`)),
          `${host} (${r.kind}) refused by the open filter`,
        );
    }
    // The case: a benchmarking address got through the allow proxy while the open filter refused it.
    assert.match(refusal('198.18.0.1', [], false) ?? '', /benchmarking/);
    assert.equal(refusal('198.18.0.1', ['198.18.0.0/15'], true), null, 'named by CIDR: reachable');
    assert.match(refusal('::ffff:198.18.0.1', [], false) ?? '', /benchmarking/);
    assert.match(refusal('0.0.0.0', ['0.0.0.0/0'], true) ?? '', /reserved/);
  });
});
