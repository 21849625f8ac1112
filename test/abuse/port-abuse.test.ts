/**
 * Attack: abuse a sandbox's published port and the socket behind it.
 *  - A connection flood against the host port (hundreds of connections opened and held), the classic
 *    accept-flood / fd-exhaustion of a shared daemon (precedent: Docker's userland proxy `docker-proxy`
 *    holding a goroutine and descriptors per connection; Slowloris, CVE-2007-6750).
 *  - Code in the sandbox using `/.forkbox/inbox/ports.sock` (where the agent connects back to the daemon)
 *    to reach something else, or the host's 127.0.0.1 ports directly: a confused-deputy relay, the
 *    precedent being SSRF through a port forwarder (e.g. Kubernetes' `kubectl port-forward`/kubelet
 *    streaming proxy, CVE-2018-1002105 class).
 *  - Port numbers out of range (0, 65536, a fraction, a privileged host port) through the API.
 *
 * Contained when: the daemon keeps at most PORTS.connectionsPerPort relayed connections per port (the rest
 * are closed at accept and counted), so its descriptors stay under a fixed bound and the port answers
 * again once the flood ends; a connection on ports.sock that is not the sandbox's agent (SO_PEERCRED)
 * with a token the daemon is waiting for is closed without a byte; the sandbox's own network namespace
 * has no route to the host's loopback; out-of-range ports are invalid_argument and nothing is created.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { PORTS } from '../../src/domain/limits.ts';
import { type AbuseDaemon, fdCount, startDaemon, waitFor } from '../helpers/abuse.ts';
import { rejectsWith } from '../helpers/assert-error.ts';
import { nativeUnavailable } from '../helpers/native.ts';

const why = nativeUnavailable();
const FLOOD = 400;
/** Descriptors the daemon may gain during the flood (two per relayed connection, plus slack). */
const FD_BOUND = 2 * PORTS.connectionsPerPort + 48;

/** Open a TCP connection to the published ports' address; resolves with the socket once connected, null on error. */
function connect(port: number): Promise<net.Socket | null> {
  return new Promise((resolve) => {
    const s = net.connect({ host: PORTS.publishHost, port }, () => resolve(s));
    s.on('error', () => resolve(null));
  });
}

async function get(url: string): Promise<string | undefined> {
  const r = await fetch(url, { signal: AbortSignal.timeout(5000) }).catch(() => null);
  return r?.status === 200 ? r.text() : undefined;
}

describe('abuse: published ports', () => {
  let d: AbuseDaemon;
  let sb = '';
  let address = '';
  let hostPort = 0;

  before(async () => {
    if (why) throw new Error(`this abuse test needs the native runtime: ${why}`);
    d = await startDaemon();
    const created = await d.api.createSandbox({ ports: [8000] });
    sb = created.id;
    const p = created.ports?.[0];
    assert.ok(p);
    address = p.address;
    hostPort = p.hostPort;
    await d.api.writeFile(sb, '/srv/hello.txt', Buffer.from('hello\n'));
    await d.api.startExec(sb, {
      argv: ['python3', '-m', 'http.server', '8000', '--bind', '127.0.0.1', '--directory', '/srv'],
    });
    await waitFor('the server answers', 20_000, () => get(`http://${address}/hello.txt`));
  });
  after(async () => {
    await d?.stop();
  });

  it('a connection flood is bounded: the daemon keeps few descriptors, refusals are counted', async () => {
    const baseline = fdCount(d.pid);
    const held: net.Socket[] = [];
    let peak = baseline;
    for (let i = 0; i < FLOOD; i++) {
      const s = await connect(hostPort);
      if (s) {
        s.on('error', () => undefined);
        held.push(s);
      }
      if (i % 20 === 0) peak = Math.max(peak, fdCount(d.pid));
    }
    // Every connection over the bound is closed by the daemon: wait until the held ones settle.
    await waitFor('connections over the bound closed', 20_000, () =>
      held.filter((s) => !s.destroyed && !s.readableEnded).length <= PORTS.connectionsPerPort
        ? true
        : undefined,
    );
    peak = Math.max(peak, fdCount(d.pid));
    process.stderr.write(`# port flood: ${FLOOD} connections; daemon fds ${baseline} before, peak ${peak}\n`);
    assert.ok(peak - baseline < FD_BOUND, `daemon fds went from ${baseline} to ${peak} (bound +${FD_BOUND})`);
    const metrics = await (await fetch(`${d.url}/metrics`)).text();
    const refused = Number(
      /forkbox_port_connections_total\{decision="refused"\} (\d+)/.exec(metrics)?.[1] ?? 0,
    );
    assert.ok(refused >= FLOOD - 2 * PORTS.connectionsPerPort, `refusals counted on /metrics: ${refused}`);
    for (const s of held) s.destroy();
    // Once the flood ends, the port answers again.
    assert.equal(
      await waitFor('the port answers after the flood', 20_000, () => get(`http://${address}/hello.txt`)),
      'hello\n',
    );
  });

  it('ports.sock reaches nothing for code in the sandbox, nor does the host loopback', async () => {
    const probe = [
      'import socket',
      'u = socket.socket(socket.AF_UNIX)',
      'u.settimeout(5)',
      'try:',
      '    u.connect("/.forkbox/inbox/ports.sock")',
      '    u.sendall(b"0" * 32 + b"\\n" + b"GET / HTTP/1.0\\r\\n\\r\\n")',
      '    print("sock", repr(u.recv(100)))',
      'except OSError as e:',
      '    print("sock", type(e).__name__)',
      't = socket.socket()',
      't.settimeout(5)',
      'try:',
      `    t.connect(("${PORTS.publishHost}", ${hostPort}))`,
      '    print("host", "connected")',
      'except OSError as e:',
      '    print("host", type(e).__name__)',
    ].join('\n');
    const r = await d.api.exec(sb, { argv: ['python3', '-c', probe] });
    assert.equal(r.exitCode, 0, r.stderr);
    // Closed without a byte (or reset): never relayed anywhere.
    assert.match(r.stdout, /^sock (b''|ConnectionResetError|BrokenPipeError)$/m, r.stdout);
    // The sandbox's loopback is its own: the host's published port is not there.
    assert.match(r.stdout, /^host ConnectionRefusedError$/m, r.stdout);
  });

  it('refuses port numbers out of range and a host port in use', async () => {
    for (const port of [0, -1, 65_536, 1.5])
      await rejectsWith(d.api.exposePort(sb, port), 'invalid_argument');
    await rejectsWith(d.api.exposePort(sb, 9000, { hostPort: 80 }), 'invalid_argument');
    const before = (await d.api.listSandboxes()).length;
    await rejectsWith(d.api.createSandbox({ ports: [70_000] }), 'invalid_argument');
    assert.equal((await d.api.listSandboxes()).length, before, 'nothing created');
    await rejectsWith(d.api.exposePort(sb, 9001, { hostPort }), 'conflict', /not free/);
    assert.deepEqual(
      (await d.api.listPorts(sb)).map((p) => p.port),
      [8000],
    );
  });
});
