/**
 * Connections to a sandbox's loopback ports, made by its agent: the daemon asks the agent over the
 * control connection (`port.connect {port, token}`); the agent connects to 127.0.0.1:<port> in its own
 * network namespace and back to `ports.sock` in the sandbox's host inbox, says the token, and relays the
 * two (agent/portrelay.py). The daemon makes the socket (sandbox root cannot create files in its inbox)
 * and trusts a connection on it only when SO_PEERCRED says the peer is the sandbox's agent (its PID 1:
 * nothing else in the sandbox has that host pid) and its first line is a token it is waiting for (one
 * use each, expiring). Everything else is closed before a byte is relayed.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, rmSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import { PORTS } from '../../../domain/limits.ts';
import type { Logger } from '../../../domain/logger.ts';
import { type Sys, socketFd } from '../host/sys.ts';
import type { AgentConnection } from './agent-connection.ts';

export const PORTS_SOCKET_NAME = 'ports.sock';
/** A token: 32 hex digits and a newline. */
const TOKEN_LINE_BYTES = 33;
/** Connections on one ports.sock that have not yet said a token. */
const MAX_UNVERIFIED = 8;

export interface DialTarget {
  hostPid: number;
  conn: AgentConnection | null;
  inboxDir: string;
}

interface Waiting {
  resolve(s: net.Socket): void;
  reject(e: Error): void;
  timer: NodeJS.Timeout;
}

interface Entry {
  server: net.Server;
  path: string;
  waiting: Map<string, Waiting>;
  unverified: number;
}

export interface PortDialer {
  /** A connection to 127.0.0.1:`port` inside sandbox `id`, relayed by its agent. */
  dial(id: string, port: number): Promise<net.Socket>;
  /** Closes sandbox `id`'s ports socket (it ended), failing the dials still waiting. */
  close(id: string): void;
  /** Closes every sandbox's ports socket. */
  closeAll(): void;
}

export function createPortDialer(deps: {
  sys: Pick<Sys, 'peerCred'>;
  log: Pick<Logger, 'warn'>;
  /** The live sandbox with runtime id `id`, or undefined. */
  target(id: string): DialTarget | undefined;
  connectMs?: number;
}): PortDialer {
  const entries = new Map<string, Entry>();
  const connectMs = deps.connectMs ?? PORTS.connectMs;

  function accept(id: string, entry: Entry, socket: net.Socket): void {
    let pid = -1;
    try {
      pid = deps.sys.peerCred(socketFd(socket)).pid;
    } catch {
      // unreadable: refused below
    }
    if (pid <= 0 || pid !== deps.target(id)?.hostPid || entry.unverified >= MAX_UNVERIFIED) {
      socket.destroy();
      return;
    }
    entry.unverified += 1;
    let done = false;
    const finish = () => {
      if (done) return false;
      done = true;
      entry.unverified -= 1;
      clearTimeout(timer);
      socket.off('readable', onReadable);
      return true;
    };
    const timer = setTimeout(() => finish() && socket.destroy(), connectMs);
    const onReadable = () => {
      const line = socket.read(TOKEN_LINE_BYTES) as Buffer | null;
      if (line === null) return;
      if (!finish()) return;
      const token = line.subarray(0, 32).toString('latin1');
      const w = line[32] === 0x0a ? entry.waiting.get(token) : undefined;
      if (!w) {
        socket.destroy();
        return;
      }
      entry.waiting.delete(token);
      clearTimeout(w.timer);
      w.resolve(socket);
    };
    socket.once('close', () => finish());
    socket.on('error', () => socket.destroy());
    socket.on('readable', onReadable);
    socket.resume();
    socket.pause(); // paused mode: read(n) takes exactly the token line, the rest stays for the pipe
  }

  async function ensure(id: string, inboxDir: string): Promise<Entry> {
    const have = entries.get(id);
    if (have) return have;
    const path = join(inboxDir, PORTS_SOCKET_NAME);
    rmSync(path, { force: true });
    const entry: Entry = {
      server: net.createServer({ pauseOnConnect: true }, (s) => accept(id, entry, s)),
      path,
      waiting: new Map(),
      unverified: 0,
    };
    entries.set(id, entry);
    await new Promise<void>((resolve, reject) => {
      entry.server.once('error', reject);
      entry.server.listen(path, () => {
        entry.server.off('error', reject);
        resolve();
      });
    }).catch((e: unknown) => {
      entries.delete(id);
      throw e;
    });
    entry.server.on('error', (e) => deps.log.warn({ sandbox: id, err: String(e) }, 'ports socket error'));
    // The agent runs as the sandbox's root, an unprivileged host uid: it needs write permission to
    // connect. The inbox is host-root-owned 0755: nothing in the sandbox can swap the path.
    chmodSync(path, 0o666);
    return entry;
  }

  return {
    async dial(id: string, port: number): Promise<net.Socket> {
      const t = deps.target(id);
      if (!t?.conn)
        throw new ForkboxError(
          'unavailable',
          `sandbox '${id}' is not running or its agent is not connected.`,
          {
            sandbox: id,
          },
        );
      const entry = await ensure(id, t.inboxDir);
      const token = randomBytes(16).toString('hex');
      const arrived = new Promise<net.Socket>((resolve, reject) => {
        const timer = setTimeout(() => {
          entry.waiting.delete(token);
          reject(new ForkboxError('timeout', `the sandbox's agent did not connect port ${port} in time.`));
        }, connectMs);
        entry.waiting.set(token, { resolve, reject, timer });
      });
      arrived.catch(() => undefined);
      try {
        await t.conn.request('port.connect', { port, token });
      } catch (e) {
        const w = entry.waiting.get(token);
        if (w) clearTimeout(w.timer);
        entry.waiting.delete(token);
        throw e;
      }
      return arrived;
    },

    close(id: string): void {
      const e = entries.get(id);
      if (!e) return;
      entries.delete(id);
      for (const w of e.waiting.values()) {
        clearTimeout(w.timer);
        w.reject(new ForkboxError('unavailable', `sandbox '${id}' ended.`));
      }
      e.server.close();
      rmSync(e.path, { force: true });
    },

    closeAll(): void {
      for (const id of [...entries.keys()]) this.close(id);
    },
  };
}
