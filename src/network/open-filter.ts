/**
 * The host filter of the `open` network policy: one nftables table per daemon (`inet forkbox_<state id>`:
 * a daemon replaces and removes only its own, so a second daemon's stop never lifts another's filter;
 * tables compose, a packet any of them drops is dropped) whose `output` chain
 * judges every packet sent by a socket owned by a host uid of the sandboxes' range (`meta skuid`; this host
 * has cgroups v1, so no cgroupv2 socket match). In the host's network namespace only the user-mode NATs
 * (network/open-nat.ts, running as the sandboxes' root uid) own such sockets: every sandbox process lives
 * in its own network namespace. Those packets may leave for the public internet only:
 * loopback, the host's own addresses, link-local, private, shared, multicast and reserved ranges are
 * dropped, IPv6 is dropped (the NAT runs IPv4 only), and DNS goes only to the resolvers of
 * /etc/resolv.conf (which may themselves be private). Sandbox root controls only its own namespace, which
 * the NAT turns into host sockets of that range: it cannot change these rules.
 *
 * Installed at daemon start (an atomic replace of its table: a restart never stacks two), verified
 * (listed back, then a probe run as the range's first uid must fail to reach a host loopback listener), removed on a
 * clean stop. When any of that fails, `open` creates are refused naming what is missing.
 */
import { readFileSync } from 'node:fs';
import { createServer, isIP } from 'node:net';
import { refusedV4 } from '../util/address-ranges.ts';
import { run, which } from '../util/subprocess.ts';

/** The table of the daemon of state dir `stateId` (state-id.ts: 12 hex digits). */
export function openFilterTable(stateId: string): string {
  if (!/^[0-9a-f]{1,32}$/.test(stateId)) throw new Error(`not a state id: ${stateId}`);
  return `forkbox_${stateId}`;
}
/** Refused for the sandboxes' uid range (IPv4): every special range of the daemon's one table. */
export const REFUSED_V4: readonly string[] = refusedV4();

/** The `nameserver` addresses of resolv.conf text (at most 3, as the C library reads). */
export function resolversOf(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*nameserver\s+(\S+)/.exec(line);
    const addr = m?.[1]?.split('%')[0];
    if (addr && isIP(addr) !== 0 && !out.includes(addr)) out.push(addr);
    if (out.length === 3) break;
  }
  return out;
}

/** The nft script that replaces `table` in one transaction (declare, delete, define). */
export function openFilterScript(
  table: string,
  ranges: readonly UidRange[],
  resolvers: readonly string[],
): string {
  const v4 = resolvers.filter((a) => isIP(a) === 4);
  const v6 = resolvers.filter((a) => isIP(a) === 6);
  const dns = (fam: 'ip' | 'ip6', list: string[]) =>
    list.length === 0
      ? []
      : [`    meta l4proto { tcp, udp } th dport 53 ${fam} daddr { ${list.join(', ')} } accept`];
  // Only packets of a socket whose uid is a sandbox's are judged (jump): `meta skuid` does not match a
  // packet without a full socket — the kernel's RST for a closed port, a SYN-ACK — so those pass, as every
  // other uid's do. (Judging them too dropped the RSTs of closed loopback ports: a connect to one hung
  // for two minutes instead of being refused, for every user of the host.)
  return [
    `table inet ${table}`,
    `delete table inet ${table}`,
    `table inet ${table} {`,
    '  chain nat-judge {',
    ...dns('ip', v4),
    ...dns('ip6', v6),
    '    oifname "lo" drop',
    '    fib daddr type { local, broadcast, multicast, anycast } drop',
    `    ip daddr { ${REFUSED_V4.join(', ')} } drop`,
    '    meta nfproto ipv6 drop',
    '  }',
    '  chain nat-egress {',
    '    type filter hook output priority 0; policy accept;',
    `    ${judgeRule(ranges)}`,
    '  }',
    '}',
    '',
  ].join('\n');
}

/** The rule that sends sandboxes' sockets to the judging chain, as nft lists it back. */
export function judgeRule(ranges: readonly UidRange[]): string {
  return `meta skuid ${skuidSet(ranges)} jump nat-judge`;
}

export type OpenFilterState = { ok: true } | { ok: false; missing: string };

/** The host uid range of the sandboxes (container 0.. maps onto hostStart..). */
export interface UidRange {
  hostStart: number;
  size: number;
}

/** The range as nft writes it: `first-last`. */
export function skuidRange(r: UidRange): string {
  return `${r.hostStart}-${r.hostStart + r.size - 1}`;
}

/** The ranges as one nft set: `{ a-b, c-d }`. */
export function skuidSet(ranges: readonly UidRange[]): string {
  return `{ ${ranges.map(skuidRange).join(', ')} }`;
}

/** Whether a process of host uid `uid` can connect to a listener on the host's 127.0.0.1. */
async function loopbackReachableAs(uid: number): Promise<boolean> {
  const server = createServer((s) => s.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  try {
    // Prints what happened: a probe that cannot run at all proves nothing, and throws below.
    const code = `import socket\ntry:\n socket.create_connection(("127.0.0.1",${port}),timeout=1)\n print("reached")\nexcept OSError:\n print("refused")`;
    const r = await run('setpriv', [
      '--reuid',
      String(uid),
      '--regid',
      String(uid),
      '--clear-groups',
      // The system's Python: the one an unprivileged uid can run (root's PATH may hold private shims).
      '/usr/bin/python3',
      '-c',
      code,
    ]);
    const said = r.stdout.toString().trim();
    if (said !== 'reached' && said !== 'refused')
      throw new Error(`the probe did not run (exit ${r.code}): ${r.stderr.trim().slice(0, 200)}`);
    return said === 'reached';
  } finally {
    server.close();
  }
}

/** Install (or replace) `table` for `range` and verify it. Never throws: says what is missing. */
export async function installOpenFilter(opts: {
  table: string;
  /** Every host uid a sandbox (and so its NAT) can run as: the uid space, and the ids from before it. */
  ranges: readonly UidRange[];
  resolvConf?: string;
}): Promise<OpenFilterState> {
  const read = (p: string) => {
    try {
      return readFileSync(p, 'utf8');
    } catch {
      return '';
    }
  };
  // Every uid of the ranges is judged: one that host people or services hold would lose its network.
  for (const { hostStart, size } of opts.ranges)
    if (!Number.isInteger(hostStart) || !Number.isInteger(size) || hostStart < 65536 || size < 1)
      return {
        ok: false,
        missing: `the sandboxes' host uid range ${hostStart}+${size} is not a subordinate range above 65535`,
      };
  for (const [tool, pkg] of [
    ['nft', 'nftables'],
    ['setpriv', 'util-linux'],
    ['slirp4netns', 'slirp4netns'],
  ] as const)
    if (!which(tool)) return { ok: false, missing: `'${tool}' is not installed (apt-get install ${pkg})` };
  const resolvers = resolversOf(opts.resolvConf ?? read('/etc/resolv.conf'));
  const r = await run('nft', ['-f', '-'], { input: openFilterScript(opts.table, opts.ranges, resolvers) });
  if (r.code !== 0)
    return {
      ok: false,
      missing: `the nftables host filter could not be installed: ${r.stderr.trim().slice(0, 300)}`,
    };
  const listed = await run('nft', ['list', 'table', 'inet', opts.table]);
  if (listed.code !== 0 || !listed.stdout.toString().includes(judgeRule(opts.ranges)))
    return { ok: false, missing: 'the nftables host filter did not read back as installed' };
  try {
    for (const { hostStart } of opts.ranges)
      if (await loopbackReachableAs(hostStart))
        return {
          ok: false,
          missing: `the host filter is installed but uid ${hostStart} still reaches host loopback`,
        };
  } catch (e) {
    return { ok: false, missing: `the host filter could not be probed: ${String(e).slice(0, 200)}` };
  }
  return { ok: true };
}

/** Remove `table` (a clean stop); absent is fine. */
export async function removeOpenFilter(table: string): Promise<void> {
  await run('nft', ['delete', 'table', 'inet', table]).catch(() => undefined);
}
