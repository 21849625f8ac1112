/**
 * Published ports: a server listening on a sandbox's loopback, reachable from the host on
 * 127.0.0.2:<host port> (PORTS.publishHost: not the listener's address). The daemon listens on the host port; each accepted connection is joined to a
 * connection to the sandbox's port that `dial` makes (the sandbox's agent connects it from inside,
 * runtimes/native/agent-link/port-dialer.ts), and the two are piped with backpressure (a side's buffer
 * stays at its stream's high-water mark). Bounded (domain/limits.ts PORTS): ports per sandbox,
 * connections per port and per sandbox (over the limit: closed at accept, counted), idle time. Every
 * connection is reported (`onConnection`: metrics, the audit log; never contents).
 */
import net from 'node:net';
import { ForkboxError } from '../domain/errors.ts';
import { PORTS } from '../domain/limits.ts';
import type { PublishedPort } from '../domain/types.ts';

export interface PortConnectionEvent {
  sandbox: string;
  port: number;
  /** 'tcp': on the host port; 'http': through the HTTP listener's /v1/sandboxes/{id}/ports/{port}/. */
  via: 'tcp' | 'http';
  decision: 'accepted' | 'refused';
  reason?: string;
}

interface Published {
  server: net.Server;
  hostPort: number;
  open: number;
}

interface SandboxPorts {
  ports: Map<number, Published>;
  open: number;
}

export interface PublishedPorts {
  /** Publish `port` of sandbox `sandbox` on host 127.0.0.2:`hostPort` (0: a free one); its host port. */
  publish(sandbox: string, port: number, hostPort: number): Promise<number>;
  /** A connection to published `port` (for the HTTP listener), counted like one on its host port. */
  connect(sandbox: string, port: number): Promise<net.Socket>;
  /** The ports published for `sandbox`, with their host ports. */
  list(sandbox: string): PublishedPort[];
  /** Stop listening on every host port published for `sandbox`. */
  close(sandbox: string): void;
  /** Stop listening on every published port of every sandbox. */
  closeAll(): void;
}

export function createPublishedPorts(opts: {
  dial(sandbox: string, port: number): Promise<net.Socket>;
  onConnection?(ev: PortConnectionEvent): void;
  idleMs?: number;
}): PublishedPorts {
  const sandboxes = new Map<string, SandboxPorts>();
  const idleMs = opts.idleMs ?? PORTS.idleMs;

  /** Take a connection slot on the port, or say why not. */
  function admit(sb: SandboxPorts, p: Published): string | null {
    if (p.open >= PORTS.connectionsPerPort) return `${p.open} connections open on this port`;
    if (sb.open >= PORTS.connectionsPerSandbox) return `${sb.open} connections open to this sandbox`;
    p.open += 1;
    sb.open += 1;
    return null;
  }

  async function open(sandbox: string, port: number, via: 'tcp' | 'http'): Promise<net.Socket> {
    const sb = sandboxes.get(sandbox);
    const p = sb?.ports.get(port);
    if (!sb || !p)
      throw new ForkboxError(
        'not_found',
        `port ${port} of sandbox '${sandbox}' is not published: publish it first.`,
        {
          sandbox,
          port,
        },
      );
    const why = admit(sb, p);
    if (why !== null) {
      opts.onConnection?.({ sandbox, port, via, decision: 'refused', reason: why });
      throw new ForkboxError('resource_exhausted', `too many connections (${why}): close some and retry.`);
    }
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      p.open -= 1;
      sb.open -= 1;
    };
    let inner: net.Socket;
    try {
      inner = await opts.dial(sandbox, port);
    } catch (e) {
      release();
      opts.onConnection?.({ sandbox, port, via, decision: 'refused', reason: String(e).slice(0, 200) });
      throw e;
    }
    opts.onConnection?.({ sandbox, port, via, decision: 'accepted' });
    inner.once('close', release);
    inner.setTimeout(idleMs, () => inner.destroy());
    inner.on('error', () => inner.destroy());
    if (!sandboxes.has(sandbox)) inner.destroy(); // it ended meanwhile
    return inner;
  }

  function join(client: net.Socket, inner: net.Socket): void {
    if (client.destroyed) {
      inner.destroy(); // the client went away while its connection was being made
      return;
    }
    client.setTimeout(idleMs, () => client.destroy());
    const end = () => {
      client.destroy();
      inner.destroy();
    };
    client.on('error', end);
    inner.on('error', end);
    client.once('close', () => inner.destroy());
    inner.once('close', () => client.end());
    client.pipe(inner);
    inner.pipe(client);
  }

  return {
    async publish(sandbox, port, hostPort) {
      let sb = sandboxes.get(sandbox);
      const have = sb?.ports.get(port);
      if (have) {
        if (hostPort !== 0 && hostPort !== have.hostPort)
          throw new ForkboxError(
            'conflict',
            `port ${port} is already published on host port ${have.hostPort}; use that one.`,
            { port, hostPort: have.hostPort },
          );
        return have.hostPort;
      }
      if ((sb?.ports.size ?? 0) >= PORTS.perSandbox)
        throw new ForkboxError(
          'resource_exhausted',
          `a sandbox publishes at most ${PORTS.perSandbox} ports; this one has that many.`,
          { max: PORTS.perSandbox },
        );
      const server = net.createServer({ pauseOnConnect: true });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ host: PORTS.publishHost, port: hostPort, exclusive: true }, () => {
          server.off('error', reject);
          resolve();
        });
      }).catch((e: NodeJS.ErrnoException) => {
        throw e.code === 'EADDRINUSE' || e.code === 'EACCES'
          ? new ForkboxError(
              'conflict',
              `host port ${hostPort} is not free: ask for another host port, or none to let the daemon pick one.`,
              { hostPort },
            )
          : e;
      });
      const addr = server.address() as net.AddressInfo;
      if (!sb) {
        sb = { ports: new Map(), open: 0 };
        sandboxes.set(sandbox, sb);
      }
      sb.ports.set(port, { server, hostPort: addr.port, open: 0 });
      server.on('error', () => undefined);
      server.on('connection', (client) => {
        client.on('error', () => client.destroy());
        open(sandbox, port, 'tcp').then(
          (inner) => {
            join(client, inner);
            client.resume();
          },
          () => client.destroy(),
        );
      });
      return addr.port;
    },

    connect: (sandbox, port) => open(sandbox, port, 'http'),

    list(sandbox) {
      const sb = sandboxes.get(sandbox);
      return sb ? [...sb.ports].map(([port, p]) => ({ port, hostPort: p.hostPort })) : [];
    },

    close(sandbox) {
      const sb = sandboxes.get(sandbox);
      if (!sb) return;
      sandboxes.delete(sandbox);
      for (const p of sb.ports.values()) p.server.close();
    },

    closeAll() {
      for (const id of [...sandboxes.keys()]) this.close(id);
    },
  };
}
