/**
 * The host ends of the agents' control sockets. Each template and sandbox has an inbox directory
 * (host root-owned, 0755) holding `ctl.sock`, on which the host listens and the sandbox's agent
 * connects. A connection is trusted only after its hello names the inbox's owner and the kernel's
 * SO_PEERCRED says the peer is the expected process: a parent sandbox can reach its children's sockets
 * through /proc/<pid>/root, so a hello alone proves nothing.
 */
import { chmodSync, rmSync } from 'node:fs';
import net from 'node:net';
import type { Logger } from '../../../domain/logger.ts';
import { type Sys, socketFd } from '../host/sys.ts';
import { type AgentHello, readHello } from './agent-connection.ts';

export interface PeerCred {
  pid: number;
  uid: number;
  gid: number;
}

export interface AgentArrival {
  socket: net.Socket;
  hello: AgentHello;
  cred: PeerCred;
}

export interface InboxOwner {
  /** Throws (with a reason for the log) when this peer may not speak for the owner. */
  verify(hello: AgentHello, cred: PeerCred): void;
  /** A verified agent connected. The owner sends `welcome` once it has placed the process. */
  onAgent(arrival: AgentArrival): void;
  /** A hello naming this owner was refused (`verify` threw `reason`); the connection is closed. */
  refused?(reason: string, hello: AgentHello): void;
}

export function createInboxHub(deps: {
  sys: Sys;
  log: Pick<Logger, 'info' | 'warn'>;
  helloTimeoutMs?: number;
}) {
  const servers = new Map<string, { server: net.Server; owner: InboxOwner; path: string }>();
  const helloTimeout = deps.helloTimeoutMs ?? 5000;

  function accept(id: string, socket: net.Socket): void {
    const entry = servers.get(id);
    if (!entry) {
      socket.destroy();
      return;
    }
    let cred: PeerCred;
    try {
      cred = deps.sys.peerCred(socketFd(socket));
    } catch (e) {
      deps.log.warn({ inbox: id, err: String(e) }, 'cannot read peer credentials; dropping connection');
      socket.destroy();
      return;
    }
    readHello(socket, helloTimeout).then(
      (hello) => {
        try {
          entry.owner.verify(hello, cred);
        } catch (e) {
          deps.log.warn({ inbox: id, pid: cred.pid, err: String(e) }, 'agent hello refused');
          socket.destroy();
          entry.owner.refused?.(e instanceof Error ? e.message : String(e), hello);
          return;
        }
        entry.owner.onAgent({ socket, hello, cred });
      },
      (e: unknown) => {
        deps.log.warn(
          { inbox: id, pid: cred.pid, err: String(e) },
          'bad hello from agent; dropping connection',
        );
        socket.destroy();
      },
    );
  }

  return {
    /** Listen on `<inboxDir>/ctl.sock` for the owner `id` (replacing a stale socket file). */
    async listen(id: string, socketPath: string, owner: InboxOwner): Promise<void> {
      const old = servers.get(id);
      if (old) {
        old.owner = owner;
        return;
      }
      rmSync(socketPath, { force: true });
      const server = net.createServer({ allowHalfOpen: false }, (s) => accept(id, s));
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(socketPath, () => {
          server.off('error', reject);
          resolve();
        });
      });
      server.on('error', (e) => deps.log.warn({ inbox: id, err: String(e) }, 'control socket error'));
      // Sandbox root is an unprivileged host uid: it needs write permission on the socket to connect.
      // chmod by path is safe here: the inbox directory is host-root-owned 0755, so nothing in it can
      // have been replaced by a symlink from inside the sandbox.
      chmodSync(socketPath, 0o666);
      servers.set(id, { server, owner, path: socketPath });
    },

    has(id: string): boolean {
      return servers.has(id);
    },

    close(id: string): void {
      const e = servers.get(id);
      if (!e) return;
      servers.delete(id);
      e.server.close();
      rmSync(e.path, { force: true });
    },

    closeAll(): void {
      for (const id of [...servers.keys()]) this.close(id);
    },
  };
}

export type InboxHub = ReturnType<typeof createInboxHub>;
