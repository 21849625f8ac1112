/**
 * The `open` policy's host filter as text and as checks: the nftables script (one table per daemon, replaced
 * atomically, keyed to the sandboxes' host uid range, which only their user-mode NATs use in the host's
 * network namespace), the resolvers DNS may go to, and a range refused when it could hold host users — the
 * path where `open` creates are then refused.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  installOpenFilter,
  openFilterScript,
  openFilterTable,
  REFUSED_V4,
  resolversOf,
} from '../../src/network/open-filter.ts';

const RANGES = [
  { hostStart: 100000, size: 65536 },
  { hostStart: 0x40000000, size: 0x30000000 },
];

describe('open network host filter', () => {
  it("replaces the daemon's own table, judging only the sandboxes' uid ranges, DNS to the resolvers only", () => {
    const table = openFilterTable('0123456789ab');
    assert.equal(table, 'forkbox_0123456789ab');
    assert.throws(() => openFilterTable('x; flush ruleset'), /not a state id/);
    const s = openFilterScript(table, RANGES, ['10.255.255.53', 'fd00::53']);
    const lines = s.split('\n');
    // declare + delete + define: nft applies the file as one transaction, so a restart replaces it.
    assert.deepEqual(lines.slice(0, 3), [
      'table inet forkbox_0123456789ab',
      'delete table inet forkbox_0123456789ab',
      'table inet forkbox_0123456789ab {',
    ]);
    const rules = lines.map((l) => l.trim());
    const at = (prefix: string) => rules.findIndex((l) => l.startsWith(prefix));
    // Only sandboxes' sockets are judged: a packet without a socket (a closed port's RST) is not.
    assert.ok(rules.includes('meta skuid { 100000-165535, 1073741824-1879048191 } jump nat-judge'));
    assert.ok(
      !rules.some((l) => l.includes('!=')),
      'no negated uid match: it would judge socketless packets',
    );
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

  it('a range that could hold host users leaves the filter uninstalled, and says so', async () => {
    for (const range of [
      { hostStart: 1000, size: 65536 },
      { hostStart: 0, size: 65536 },
      { hostStart: 100000, size: 0 },
    ]) {
      const state = await installOpenFilter({
        table: 'forkbox_0123456789ab',
        ranges: [RANGES[1] ?? range, range],
      });
      assert.equal(state.ok, false);
      assert.match(state.ok ? '' : state.missing, /not a subordinate range above 65535/);
    }
  });
});
