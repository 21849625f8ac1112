/**
 * The host end of a gvisor sandbox's control socket. Only host root reaches the inbox (its directory is
 * 0700 under a 0700 state dir) and gVisor's gofer connects on the agent's behalf, so the peer is always
 * a root process: what proves the agent is its nonce, a secret only this sandbox was given (its spec's
 * environment, or the identity.json of a restore, both root-only on the host). A sandbox cannot reach
 * another's inbox: it sees no host path but its own inbox and the agent's code.
 */
import { ForkboxError } from '../../domain/errors.ts';
import type { Logger } from '../../domain/logger.ts';
import { type AgentConnection, createAgentConnection } from '../native/agent-link/agent-connection.ts';
import type { AgentTimeouts } from '../native/agent-link/agent-timeouts.ts';
import type { InboxHub } from '../native/agent-link/inbox-hub.ts';
import { deadline } from '../native/host/deadline.ts';

/** A gvisor sandbox the runtime holds. */
export interface GvisorSandbox {
  /** Its container id (the runtime id). */
  id: string;
  /** The secret its agent says hello with. */
  nonce: string;
  conn: AgentConnection | null;
  /** Resolves when a connection is up (again); replaced each time one is lost. */
  connected: Promise<void>;
  paused: boolean;
  /** The image layers its root stacks (topmost first). */
  layers: string[];
  /** Its sentry's host cgroup (relative). */
  cgroup: string;
  /** Host pid of its sandbox process (the sentry). */
  hostPid: number;
  /** It is being killed, or was: a lost connection is then no news. */
  ended: boolean;
  /** Its connection dropped on purpose (held for a checkpoint): not a death. */
  holding: boolean;
}

export interface GvisorLink {
  /** Listens on the sandbox's control socket; every verified (re)connection becomes its connection. */
  serve(sb: GvisorSandbox, socketPath: string): Promise<void>;
  /** Waits (up to `ms`) for the sandbox's agent to be connected; throws `timeout` naming `what`. */
  waitConnected(sb: GvisorSandbox, ms: number, what: string): Promise<AgentConnection>;
}

export function createGvisorLink(deps: {
  hub: InboxHub;
  log: Logger;
  timeouts: AgentTimeouts;
  /** The connection of a sandbox that is neither ending nor holding was lost. */
  onLost(sb: GvisorSandbox): void;
}): GvisorLink {
  function expectConnection(sb: GvisorSandbox): () => void {
    let resolve: () => void = () => undefined;
    sb.connected = new Promise<void>((r) => {
      resolve = r;
    });
    return resolve;
  }

  async function serve(sb: GvisorSandbox, socketPath: string): Promise<void> {
    let connected = expectConnection(sb);
    await deps.hub.listen(sb.id, socketPath, {
      admits: (cred) => (cred.uid === 0 ? null : `peer uid ${cred.uid} is not gVisor's gofer (root)`),
      verify(hello) {
        if (hello.role !== 'sandbox' || hello.sandboxId !== sb.id)
          throw new Error(`hello names ${hello.role} ${hello.sandboxId}`);
        if (hello.nonce !== sb.nonce) throw new Error('wrong nonce');
      },
      onAgent({ socket, hello }) {
        sb.conn?.close();
        const conn = createAgentConnection(socket, hello, {
          log: deps.log,
          timeouts: deps.timeouts,
          suspended: () => sb.paused,
        });
        sb.conn = conn;
        conn.on('close', () => {
          if (sb.conn !== conn) return;
          sb.conn = null;
          connected = expectConnection(sb);
          if (!sb.ended && !sb.holding) deps.onLost(sb);
        });
        connected();
      },
    });
  }

  async function waitConnected(sb: GvisorSandbox, ms: number, what: string): Promise<AgentConnection> {
    if (sb.conn) return sb.conn;
    await deadline<void>(ms, what, (resolve) => void sb.connected.then(resolve));
    if (!sb.conn) throw new ForkboxError('unavailable', `${what}: its agent is not connected; try again.`);
    return sb.conn;
  }

  return { serve, waitConnected };
}
