/**
 * Published ports (real runtime, real HTTP listener): a server listening on a sandbox's loopback
 * (`python3 -m http.server`, a background exec) answers on its published host port; through the TCP
 * listener's /v1/sandboxes/{id}/ports/{port}/ only with the right token (another tenant: not found);
 * two forked children answer on host ports of their own with their own content; port_expose and
 * port_list over MCP; a snapshot's restore publishes its source's ports on host ports of its own; a
 * merged parent serves on its winner's host ports (a port only it had: on a new one); the host port
 * closes when the sandbox is killed; connections are audited
 * (door `port`) and counted; after a daemon restart the ports are re-opened on the same host ports.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { openEngine } from '../../src/composition.ts';
import { PORTS } from '../../src/domain/limits.ts';
import { memoryAuditLog } from '../../src/protocol/audit.ts';
import { createDefaultSandbox, createForkboxMcpServer } from '../../src/protocol/mcp/server.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import type { Listener } from '../../src/transports/http-listener.ts';
import {
  makeStateDir,
  type NativeFixture,
  nativeUnavailable,
  openNative,
  quietLog,
} from '../helpers/native.ts';
import { startTenantListener } from '../helpers/tenant-listener.ts';
import { waitFor } from '../helpers/wait-for.ts';

const skip = nativeUnavailable();
const TOKEN_A = 'tok-alice-0c1d2e3f4a5b6c7d8e9f0a1b';
const TOKEN_B = 'tok-bob-9f8e7d6c5b4a39281706f5e4';

/** Start `python3 -m http.server PORT` in the sandbox serving /srv, whose hello.txt says `body`. */
async function serve(api: ForkboxApi, sb: string, port: number, body: string): Promise<void> {
  await api.writeFile(sb, '/srv/hello.txt', Buffer.from(body));
  await api.startExec(sb, {
    argv: ['python3', '-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', '/srv'],
  });
}

/** GET a URL's text once it answers 200 (the server in the sandbox takes a moment to start). */
async function getWhenUp(url: string, headers: Record<string, string> = {}): Promise<string> {
  return waitFor(
    async () => {
      const r = await fetch(url, { headers, signal: AbortSignal.timeout(5000) }).catch(() => null);
      return r?.status === 200 ? r.text() : undefined;
    },
    { timeoutMs: 20_000, what: `${url} answering 200` },
  );
}

/** Whether something accepts TCP connections on the published ports' address. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: PORTS.publishHost, port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

describe('published ports', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let listener: Listener;
  let base: string;
  let alice: ForkboxApi;
  const audit = memoryAuditLog();

  before(async () => {
    fx = await openNative({ audit });
    ({ listener, base } = await startTenantListener(
      fx,
      { alice: TOKEN_A, bob: TOKEN_B },
      { hostMetrics: fx.opened.metrics },
    ));
    alice = fx.opened.engine.scoped({ tenant: 'alice' });
  });
  after(async () => {
    await listener?.close(2000);
    for (const s of (await alice?.listSandboxes()) ?? [])
      await alice.killSandbox(s.id).catch(() => undefined);
    await fx?.close();
  });

  let sb = '';
  let hostPort = 0;

  it('a server in the sandbox answers on its published host port', async () => {
    const created = await alice.createSandbox({ name: 'web', ports: [8000] });
    sb = created.id;
    const p = created.ports?.[0];
    assert.ok(p, 'create shows the published port');
    assert.equal(p.port, 8000);
    assert.equal(p.address, `127.0.0.2:${p.hostPort}`);
    hostPort = p.hostPort;
    assert.deepEqual(await alice.listPorts(sb), [p]);
    await serve(alice, sb, 8000, 'hello from web\n');
    assert.equal(await getWhenUp(`http://${p.address}/hello.txt`), 'hello from web\n');
    // The same port again: the same address (and a host port in use is refused).
    assert.deepEqual(await alice.exposePort(sb, 8000), p);
    const lines = audit.lines.filter((l) => l.door === 'port' && l.sandbox === sb);
    assert.ok(lines.some((l) => l.outcome === 'accepted' && l.port === 8000 && l.route === 'tcp'));
    assert.ok(fx.opened.metrics.read().ports.accepted >= 1, 'counted for /metrics');
  });

  it('through the HTTP listener only with the right token; another tenant gets not found', async () => {
    const url = `${base}/v1/sandboxes/${sb}/ports/8000/hello.txt`;
    assert.equal(await getWhenUp(url, { authorization: `Bearer ${TOKEN_A}` }), 'hello from web\n');
    const fenced = await fetch(url, { headers: { authorization: `Bearer ${TOKEN_A}` } });
    assert.match(fenced.headers.get('content-security-policy') ?? '', /^sandbox /, 'an opaque origin');
    assert.equal((await fetch(url)).status, 401);
    assert.equal(
      (await fetch(url, { headers: { authorization: 'Bearer tok-nobody-000000000000' } })).status,
      401,
    );
    const bob = await fetch(url, { headers: { authorization: `Bearer ${TOKEN_B}` } });
    assert.equal(bob.status, 404);
    assert.doesNotMatch(await bob.text(), /hello from web/);
    const unpublished = await fetch(`${base}/v1/sandboxes/${sb}/ports/8001/`, {
      headers: { authorization: `Bearer ${TOKEN_A}` },
    });
    assert.equal(unpublished.status, 404);
    const m = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN_A}` } });
    assert.match(await m.text(), /forkbox_port_connections_total\{decision="accepted"\} [1-9]/);
  });

  it('two forked children answer on host ports of their own, with their own content', async () => {
    const fork = await alice.forkSandbox(sb, { n: 2 });
    const kids = fork.children.map((c) => c.sandbox);
    assert.equal(kids.length, 2);
    const addrs: string[] = [];
    for (const [i, kid] of kids.entries()) {
      assert.ok(kid);
      const p = kid.ports?.find((x) => x.port === 8000);
      assert.ok(p, `child ${i} has port 8000 published`);
      addrs.push(p.address);
      // Processes are not carried by a fork: each child starts its own server.
      await serve(alice, kid.id, 8000, `hello from child ${i}\n`);
    }
    assert.equal(
      new Set([...addrs, `${PORTS.publishHost}:${hostPort}`]).size,
      3,
      'three different host ports',
    );
    for (const [i, a] of addrs.entries())
      assert.equal(await getWhenUp(`http://${a}/hello.txt`), `hello from child ${i}\n`);
    assert.equal(await getWhenUp(`http://${PORTS.publishHost}:${hostPort}/hello.txt`), 'hello from web\n');
  });

  it('port_expose and port_list over MCP', async () => {
    const api = fx.opened.api;
    const server = createForkboxMcpServer({ api, defaults: createDefaultSandbox(), version: 'test' });
    const [ct, st] = InMemoryTransport.createLinkedPair();
    await server.connect(st);
    const client = new Client({ name: 'ports-test', version: '1' });
    await client.connect(ct);
    try {
      const own = (await api.createSandbox({ name: 'mcp-web' })).id;
      const call = async (name: string, args: Record<string, unknown>) => {
        const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
        assert.notEqual(r.isError, true, JSON.stringify(r.content));
        return r.structuredContent as Record<string, unknown>;
      };
      const exposed = await call('port_expose', { sandbox: own, port: 9000 });
      assert.equal(exposed.port, 9000);
      assert.equal(typeof exposed.host_port, 'number');
      assert.deepEqual(await call('port_list', { sandbox: own }), { ports: [exposed] });
      await serve(api, own, 9000, 'hello over mcp\n');
      assert.equal(
        await getWhenUp(`http://${PORTS.publishHost}:${exposed.host_port}/hello.txt`),
        'hello over mcp\n',
      );
      const bad = (await client.callTool({
        name: 'port_expose',
        arguments: { sandbox: own, port: 70000 },
      })) as CallToolResult;
      assert.equal(bad.isError, true, 'a port out of range is refused');
      await api.killSandbox(own);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it("a snapshot's restores publish the ports its source had, on host ports of their own", async () => {
    const snap = await alice.createSnapshot(sb, { name: 'web-snap' });
    const r = await alice.restoreSnapshot(snap.id, { n: 1 });
    const kid = r.children[0]?.sandbox;
    assert.ok(kid, JSON.stringify(r));
    const p = kid.ports?.find((x) => x.port === 8000);
    assert.ok(p, 'the restored sandbox has port 8000 published');
    assert.notEqual(p.hostPort, hostPort);
    assert.deepEqual(await alice.listPorts(kid.id), [p]);
    // Processes are not carried by a restore: it starts its own server, on the files of the snapshot.
    await alice.startExec(kid.id, {
      argv: ['python3', '-m', 'http.server', '8000', '--bind', '127.0.0.1', '--directory', '/srv'],
    });
    assert.equal(await getWhenUp(`http://${p.address}/hello.txt`), 'hello from web\n');
    await alice.killSandbox(kid.id);
    await alice.deleteSnapshot(snap.id);
  });

  it("a merge: the parent serves on the winner's host ports, and a port only it had on a new one", async () => {
    const parent = await alice.createSandbox({ ports: [8100] });
    const old = parent.ports?.[0];
    assert.ok(old);
    const fork = await alice.forkSandbox(parent.id, { n: 1 });
    const winner = fork.children[0]?.sandbox;
    assert.ok(winner, JSON.stringify(fork));
    const won = winner.ports?.[0];
    assert.ok(won && won.hostPort !== old.hostPort, JSON.stringify(winner.ports));
    await serve(alice, winner.id, 8100, 'hello from the winner\n');
    // A port the parent publishes after the fork: the winner does not have it.
    const late = await alice.exposePort(parent.id, 8200);
    const merged = await alice.mergeSandbox(parent.id, winner.id);
    const ports = merged.sandbox.ports ?? [];
    assert.deepEqual(
      ports.find((x) => x.port === 8100),
      won,
    );
    const again = ports.find((x) => x.port === 8200);
    assert.ok(again && again.hostPort !== late.hostPort, JSON.stringify(ports));
    assert.deepEqual(await alice.listPorts(parent.id), ports);
    assert.equal(await getWhenUp(`http://${won.address}/hello.txt`), 'hello from the winner\n');
    await serve(alice, parent.id, 8200, 'late port\n');
    assert.equal(await getWhenUp(`http://${again.address}/hello.txt`), 'late port\n');
    // The parent's old host ports closed with its old processes.
    assert.equal(await listening(old.hostPort), false);
    assert.equal(await listening(late.hostPort), false);
    await alice.killSandbox(parent.id);
  });

  it('the host port closes when the sandbox is killed', async () => {
    assert.equal(await listening(hostPort), true);
    await alice.killSandbox(sb);
    await waitFor(async () => ((await listening(hostPort)) ? undefined : true), {
      timeoutMs: 10_000,
      what: `host port ${hostPort} closed`,
    });
  });
});

describe('published ports across a daemon restart', { skip: skip ?? false }, () => {
  it('are re-opened on the same host ports, and answer', async () => {
    const stateDir = makeStateDir();
    let opened = await openEngine({ stateDir, log: quietLog(), reapIntervalMs: 0 });
    try {
      const created = await opened.api.createSandbox({ ports: [8000], persistent: true });
      const p = created.ports?.[0];
      assert.ok(p);
      // A server left running by an exec that ended (`&`): kept across a restart (running execs are not).
      await opened.api.writeFile(created.id, '/srv/hello.txt', Buffer.from('still here\n'));
      await opened.api.exec(created.id, {
        cmd: 'python3 -m http.server 8000 --bind 127.0.0.1 --directory /srv >/dev/null 2>&1 &',
      });
      assert.equal(await getWhenUp(`http://${p.address}/hello.txt`), 'still here\n');
      await opened.close({ killSandboxes: false }); // the daemon goes; the sandbox and its server stay
      assert.equal(await listening(p.hostPort), false, 'nothing listens while the daemon is down');
      opened = await openEngine({ stateDir, log: quietLog(), reapIntervalMs: 0 });
      assert.deepEqual(await opened.api.listPorts(created.id), [p]);
      assert.equal(await getWhenUp(`http://${p.address}/hello.txt`), 'still here\n');
    } finally {
      await opened.close({ killSandboxes: true });
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
