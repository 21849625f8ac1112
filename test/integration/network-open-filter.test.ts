/**
 * The `open` policy's host filter on a real daemon (engine on the native runtime, capped at `open`): at
 * start it installs its own nftables table (`forkbox_<state id>`) for the sandboxes' host uid range (where
 * their user-mode NATs run), whose uids then reach neither host loopback nor the host's own uplink address
 * while other uids still do; a clean stop takes that table away, and only that one: a second daemon's stop
 * leaves the first one's filter in place. Only host addresses are connected to (listeners
 * this test opens).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { openFilterTable } from '../../src/network/open-filter.ts';
import { stateIdOf } from '../../src/runtimes/native/host/state-id.ts';
import { parseNetworkCap } from '../../src/service/sandboxes/network-cap.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();
/** The host uids sandboxes (and their NATs) run as: the stored ids of older sandboxes, and the uid space. */
const RANGES = [
  [100000, 165535],
  [1073741824, 1879048191],
] as const;
const JUDGE = /meta skuid \{ 100000-165535, 1073741824-1879048191 \} jump nat-judge/;

/** The listing of the open filter table of the daemon on `stateDir`, or '' when there is none. */
function table(stateDir: string): string {
  try {
    return execFileSync('nft', ['list', 'table', 'inet', openFilterTable(stateIdOf(stateDir))], {
      stdio: ['ignore', 'pipe', 'ignore'],
    }).toString();
  } catch {
    return '';
  }
}

/** 'reached' or 'refused': a TCP connect to addr:port by a process of host uid `uid` (1 s). */
function connectAs(uid: number, addr: string, port: number): string {
  const code = `import socket\ntry:\n socket.create_connection(("${addr}",${port}),timeout=1)\n print("reached")\nexcept OSError:\n print("refused")`;
  return execFileSync('setpriv', [
    '--reuid',
    String(uid),
    '--regid',
    String(uid),
    '--clear-groups',
    '/usr/bin/python3',
    '-c',
    code,
  ])
    .toString()
    .trim();
}

describe('network open: the host filter', { skip: skip ?? false }, () => {
  let fx: NativeFixture | undefined;
  let stateDir = '';
  let server: Server;
  let port = 0;
  const uplink = Object.values(networkInterfaces())
    .flatMap((l) => l ?? [])
    .find((i) => i.family === 'IPv4' && !i.internal)?.address;
  before(async () => {
    server = createServer((s) => s.destroy());
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
    const a = server.address();
    port = typeof a === 'object' && a ? a.port : 0;
    fx = await openNative({ networkCap: parseNetworkCap('open', undefined) });
    stateDir = fx.stateDir;
  });
  after(async () => {
    await fx?.close();
    server.close();
  });

  it("installs one table keyed to the sandboxes' uid range, which reaches neither loopback nor the uplink", () => {
    assert.match(table(stateDir), JUDGE);
    for (const [first, last] of RANGES) {
      for (const uid of [first, last])
        assert.equal(connectAs(uid, '127.0.0.1', port), 'refused', `uid ${uid}`);
      assert.equal(
        connectAs(last + 1, '127.0.0.1', port),
        'reached',
        'the ranges end where the sandboxes’ do',
      );
    }
    assert.equal(connectAs(65534, '127.0.0.1', port), 'reached', 'other uids are not judged');
    assert.ok(uplink, 'the host has an uplink address');
    assert.equal(connectAs(RANGES[1][0], uplink, port), 'refused');
    assert.equal(connectAs(65534, uplink, port), 'reached');
  });

  it("packets without a sandbox's socket pass: a closed loopback port refuses at once", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const a = closed.address();
    const gone = typeof a === 'object' && a ? a.port : 0;
    await new Promise((r) => closed.close(r));
    // The kernel's RST has no socket: were it judged (and dropped), the connect would wait out its timeout.
    const code = `import socket\ntry:\n socket.create_connection(("127.0.0.1",${gone}),timeout=5)\nexcept ConnectionRefusedError:\n print("RST")\nexcept OSError as e:\n print(type(e).__name__)`;
    assert.equal(execFileSync('/usr/bin/python3', ['-c', code]).toString().trim(), 'RST');
  });

  it("a second open daemon's clean stop removes its own table only", async () => {
    const second = await openNative({ networkCap: parseNetworkCap('open', undefined) });
    assert.match(table(second.stateDir), JUDGE);
    await second.close();
    assert.equal(table(second.stateDir), '');
    assert.match(table(stateDir), JUDGE);
    assert.equal(connectAs(RANGES[1][0], '127.0.0.1', port), 'refused', 'the first daemon is still filtered');
  });

  it('a clean stop removes the table', async () => {
    await fx?.close();
    fx = undefined;
    assert.equal(table(stateDir), '');
  });
});
