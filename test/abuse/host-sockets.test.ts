/**
 * Attack: reaching host services over Unix sockets — the daemon's own API socket (`<state>/forkbox.sock`,
 * through which anything on the host could be done), the default daemon's socket, a Unix socket this
 * test listens on by path and one in the abstract namespace, and the daemon's TCP listener on the host's
 * loopback — from an exec and from the REPL.
 * Precedent: sandbox-runtime "should block Unix socket connections" (docker.sock, D-Bus, X11; peers 6b #11).
 * Contained when: every connection fails, the host listeners see none (while the host can reach them),
 * and the sandbox's /proc/net/unix does not even list the host's abstract socket.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createDaemonClient, type DaemonClient } from '../../src/transports/daemon-client.ts';
import { bothPython, token } from '../helpers/attacks.ts';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { MAIN_STATE_DIR, makeStateDir, nativeUnavailable } from '../helpers/native.ts';

const skip = nativeUnavailable();

const SCRIPT = `
import json, socket, sys
paths, abstract, tcp = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
res = {}
for p in paths + ["@" + abstract]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect("\\0" + p[1:] if p.startswith("@") else p)
        res[p] = "CONNECTED"
    except OSError as e:
        res[p] = "refused: %s" % e
    finally:
        s.close()
host, port = tcp
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.settimeout(3)
try:
    s.connect((host, port))
    res["tcp"] = "CONNECTED"
except OSError as e:
    res["tcp"] = "refused: %s" % e
s.close()
res["listed"] = abstract in open("/proc/net/unix").read()
print(json.dumps(res))
`;

function listen(server: net.Server, where: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(where, () => resolve());
  });
}

function reach(where: string | { host: string; port: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = typeof where === 'string' ? net.connect(where) : net.connect(where);
    s.once('connect', () => {
      s.destroy();
      resolve();
    });
    s.once('error', reject);
  });
}

describe('abuse: host Unix sockets and the daemon’s own sockets', { skip: skip ?? false }, () => {
  let stateDir: string;
  let daemon: ServedDaemon | undefined;
  let api: DaemonClient;
  let id: string;
  const abstract = token('forkbox-abuse');
  const pathSock = `/tmp/${token('forkbox-abuse')}.sock`;
  const servers: net.Server[] = [];
  let connections = 0;

  before(async () => {
    stateDir = makeStateDir();
    daemon = await startServe(stateDir);
    api = createDaemonClient({ socketPath: join(stateDir, 'forkbox.sock') });
    id = (await api.createSandbox({})).id;
    for (const where of [pathSock, `\0${abstract}`]) {
      const server = net.createServer((s) => {
        connections++;
        s.on('error', () => undefined);
        s.end();
      });
      await listen(server, where);
      servers.push(server);
    }
  });
  after(async () => {
    for (const s of servers) s.close();
    api?.close();
    await stopServeAndClean(daemon?.child, stateDir);
  });

  it('nothing on the host is reachable from an exec or the REPL', async () => {
    assert.ok(daemon);
    const daemonSock = join(stateDir, 'forkbox.sock');
    const tcp = new URL(daemon.url);
    // Controls: the host reaches every one of them.
    await reach(daemonSock);
    await reach(pathSock);
    await reach(`\0${abstract}`);
    await reach({ host: tcp.hostname, port: Number(tcp.port) });
    assert.match(readFileSync('/proc/net/unix', 'utf8'), new RegExp(`@${abstract}`), 'listed on the host');
    const before = connections;

    const paths = [daemonSock, join(MAIN_STATE_DIR, 'forkbox.sock'), pathSock];
    const r = await bothPython<Record<string, string | boolean>>(api, id, SCRIPT, [
      JSON.stringify(paths),
      abstract,
      JSON.stringify([tcp.hostname, Number(tcp.port)]),
    ]);
    for (const [where, res] of Object.entries(r)) {
      for (const p of [...paths, `@${abstract}`, 'tcp'])
        assert.match(String(res[p]), /^refused: /, `${where}: ${p} → ${res[p]}`);
      assert.equal(res.listed, false, `${where}: the host's abstract socket is listed in the sandbox`);
    }
    assert.equal(connections, before, 'the host listeners saw no connection from the sandbox');
    // The daemon still serves (the attempts did not disturb it).
    assert.equal((await api.exec(id, { argv: ['echo', 'ok'] })).stdout, 'ok\n');
  });
});
