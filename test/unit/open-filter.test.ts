/**
 * The `open` policy's host filter as text and as checks: the nftables script (one table, replaced
 * atomically, keyed to the NAT's uid), the resolvers DNS may go to, and the uid refused when it could
 * collide with a host user or the sandboxes' range — the path where `open` creates are then refused.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  installOpenFilter,
  openFilterScript,
  openUidProblem,
  REFUSED_V4,
  resolversOf,
} from '../../src/network/open-filter.ts';

const RANGE = { hostStart: 100000, size: 65536 };

describe('open network host filter', () => {
  it('replaces one forkbox table, judging only the NAT uid, DNS to the resolvers only', () => {
    const s = openFilterScript(99999, ['10.255.255.53', 'fd00::53']);
    const lines = s.split('\n');
    // declare + delete + define: nft applies the file as one transaction, so a restart replaces it.
    assert.deepEqual(lines.slice(0, 3), [
      'table inet forkbox',
      'delete table inet forkbox',
      'table inet forkbox {',
    ]);
    const rules = lines.map((l) => l.trim());
    const at = (prefix: string) => rules.findIndex((l) => l.startsWith(prefix));
    assert.ok(rules.includes('meta skuid != 99999 accept'));
    assert.ok(rules.includes('meta l4proto { tcp, udp } th dport 53 ip daddr { 10.255.255.53 } accept'));
    assert.ok(rules.includes('meta l4proto { tcp, udp } th dport 53 ip6 daddr { fd00::53 } accept'));
    // The DNS exceptions come before the drops; loopback, the host's own addresses, the ranges, IPv6 dropped.
    for (const drop of ['oifname "lo" drop', 'fib daddr type', 'ip daddr {', 'meta nfproto ipv6 drop'])
      assert.ok(at(drop) > at('meta l4proto'), drop);
    for (const r of ['10.0.0.0/8', '169.254.0.0/16', '127.0.0.0/8', '100.64.0.0/10', '192.168.0.0/16'])
      assert.ok(REFUSED_V4.includes(r), r);
    // The documentation ranges the test hosts use stay reachable.
    assert.ok(!REFUSED_V4.some((r) => r.startsWith('198.51.100.') || r.startsWith('203.0.113.')));
  });

  it('reads at most three nameservers, skipping what is not an address', () => {
    const conf =
      '# x\nnameserver 10.255.255.53\nnameserver bogus\nnameserver fe80::1%eth0\nnameserver 1.1.1.1\nnameserver 8.8.8.8\n';
    assert.deepEqual(resolversOf(conf), ['10.255.255.53', 'fe80::1', '1.1.1.1']);
    assert.deepEqual(resolversOf(''), []);
  });

  it('refuses a uid of a host user, of the sandboxes, or out of range', () => {
    const passwd = 'root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n';
    assert.equal(openUidProblem(99999, RANGE, passwd), null);
    assert.match(openUidProblem(1000, RANGE, passwd) ?? '', /host user 'alice'/);
    assert.match(openUidProblem(100000, RANGE, passwd) ?? '', /sandboxes' host uid range/);
    assert.match(openUidProblem(0, RANGE, passwd) ?? '', /not a valid/);
  });

  it('an unusable uid leaves the filter uninstalled, and says so', async () => {
    const state = await installOpenFilter({
      uid: 1000,
      reserved: RANGE,
      passwd: 'alice:x:1000:1000::/:/bin/sh\n',
    });
    assert.equal(state.ok, false);
    assert.match(state.ok ? '' : state.missing, /--open-uid/);
  });
});
