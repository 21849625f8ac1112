/**
 * The host end of one sandbox's control socket: who may connect (SO_PEERCRED before anything is read,
 * then the hello), placing a new sandbox's PID 1 in its cgroups before welcoming it, the readiness ping,
 * and what happens when the connection ends (exit-watch.ts).
 */
import { ForkboxError } from '../../../domain/errors.ts';
import type { Logger } from '../../../domain/logger.ts';
import { createAgentConnection } from '../agent-link/agent-connection.ts';
import type { AgentTimeouts } from '../agent-link/agent-timeouts.ts';
import type { InboxHub, PeerCred } from '../agent-link/inbox-hub.ts';
import type { Cgroups } from '../cgroups/index.ts';
import type { NativePaths } from '../host/paths.ts';
import { procStartTime, readProcStatus } from '../host/proc.ts';
import type { ExitWatch } from './exit-watch.ts';
import type { LiveSandbox } from './live-sandbox.ts';
import type { OomOrder } from './oom-order.ts';

/**
 * What the host expects of a sandbox being made: its PID 1's nonce, the PID 1 it is forked under, and the
 * host uid it greets as (its block's root; absent for a child of an agent from before uid blocks).
 */
export interface Expectation {
  nonce: string;
  parentPid: number;
  uid?: number;
}

/**
 * Whether `pid` is `ancestor` or a process up to two generations below it: true, false, or null when a
 * process on the way was gone before its parent could be read. A new sandbox's PID 1 is reparented to the
 * parent's PID 1 once the forking middle process exits, but it may say hello first, while its parent is
 * still that middle process (whose parent is the REPL worker, a child of PID 1).
 */
function descendsFrom(pid: number, ancestor: number): boolean | null {
  let p = pid;
  for (let hops = 0; hops < 3 && p > 1; hops++) {
    if (p === ancestor) return true;
    const st = readProcStatus(p);
    if (!st) return null;
    p = st.ppid;
  }
  return p === ancestor;
}

/**
 * Whether the peer `pid` was forked under `ancestor`. The middle process may exit and be reaped between
 * reading the peer's parent and reading that parent's own: then the peer has been reparented, so its
 * status is read again (a few times: each retry follows a reparenting, which happens at most twice).
 */
function forkedUnder(pid: number, ancestor: number): { ok: boolean; ppid: number; nsPids: number[] } | null {
  for (let tries = 0; tries < 4; tries++) {
    const st = readProcStatus(pid);
    if (!st) return null;
    const under = descendsFrom(st.ppid, ancestor);
    if (under !== null) return { ok: under, ppid: st.ppid, nsPids: st.nsPids };
  }
  return null;
}

/** Why `cred` cannot be the agent of `sb`, or null when it can (checked before reading anything). */
function notTheAgent(sb: LiveSandbox, expect: Expectation | null, cred: PeerCred): string | null {
  if (sb.hostPid > 0)
    return cred.pid === sb.hostPid ? null : `peer pid ${cred.pid} is not the sandbox's PID 1 (${sb.hostPid})`;
  // First contact: the peer must be PID 1 of a pid namespace (NSpid ends in 1) forked under the parent's
  // PID 1.
  const st = expect ? forkedUnder(cred.pid, expect.parentPid) : null;
  if (!st) return `unexpected first connection from pid ${cred.pid}`;
  if (st.nsPids[st.nsPids.length - 1] !== 1 || !st.ok)
    return `peer pid ${cred.pid} (ppid ${st.ppid}, NSpid ${st.nsPids.join(' ')}) is not a new sandbox PID 1`;
  if (expect?.uid !== undefined && cred.uid !== expect.uid)
    return `peer pid ${cred.pid} runs as host uid ${cred.uid}, not as the new sandbox's root (${expect.uid})`;
  return null;
}

export interface SandboxLinkDeps {
  paths: NativePaths;
  cgroups: Cgroups;
  hub: InboxHub;
  log: Logger;
  timeouts: AgentTimeouts;
  exits: ExitWatch;
  oom: OomOrder;
}

export interface SandboxLink {
  /** Listens on a sandbox's control socket; for one being made, `ready` settles once its agent is set up. */
  serve(sb: LiveSandbox, expect: Expectation | null): Promise<{ ready: Promise<void> }>;
}

export function createSandboxLink(deps: SandboxLinkDeps): SandboxLink {
  const { paths, cgroups, hub, log } = deps;

  /** A first greeting: place PID 1 (its REPL worker, forked next, inherits the cgroup), rank it for OOM. */
  async function placeNew(sb: LiveSandbox, cred: PeerCred): Promise<void> {
    sb.hostPid = cred.pid;
    sb.startTime = procStartTime(cred.pid) ?? 0;
    await cgroups.addProcess(`${sb.cgroup}/agent`, cred.pid);
    deps.oom.rank(cred.pid, sb.depth);
  }

  /**
   * Listen on a sandbox's control socket; every verified (re)connection becomes its connection. For a
   * sandbox being made (`expect`), the returned `ready` settles when it is ready: its PID 1 greets the host
   * right after the clone (and is placed in the sandbox's cgroups then), sets itself up, and only then
   * answers the readiness ping sent with the welcome — or answers it with its set-up's error.
   */
  async function serve(sb: LiveSandbox, expect: Expectation | null): Promise<{ ready: Promise<void> }> {
    let resolveConnected: () => void = () => undefined;
    sb.connected = new Promise<void>((r) => {
      resolveConnected = r;
    });
    let settle: { resolve: () => void; reject: (e: unknown) => void } = {
      resolve: () => undefined,
      reject: () => undefined,
    };
    const ready = new Promise<void>((resolve, reject) => {
      settle = { resolve, reject };
    });
    ready.catch(() => undefined); // spawn awaits it; a sandbox served for recovery never settles it
    await hub.listen(sb.id, paths.controlSocket(sb.id), {
      admits: (cred) => notTheAgent(sb, expect, cred),
      refused(reason) {
        if (expect && sb.hostPid === 0)
          settle.reject(
            new ForkboxError('internal', `the agent of new sandbox ${sb.id} was refused: ${reason}`),
          );
      },
      verify(hello, cred) {
        if (hello.sandboxId !== sb.id || hello.role !== 'sandbox')
          throw new Error(`hello names ${hello.role} ${hello.sandboxId}`);
        const why = notTheAgent(sb, expect, cred);
        if (why !== null) throw new Error(why);
        if (sb.hostPid === 0 && hello.nonce !== expect?.nonce) throw new Error('wrong nonce');
      },
      onAgent({ socket, hello, cred }) {
        void (async () => {
          const first = sb.hostPid === 0;
          try {
            if (first) await placeNew(sb, cred);
            sb.conn?.close();
            // welcome and the readiness ping in one write
            socket.cork();
            const conn = createAgentConnection(socket, hello, {
              log,
              timeouts: deps.timeouts,
              suspended: () => sb.paused,
            });
            sb.conn = conn;
            conn.on('unresponsive', (err) => {
              const quiet = Math.round(Number(err.details?.quietMs ?? deps.timeouts.livenessMs) / 100) / 10;
              deps.exits.unresponsive(
                sb,
                `its agent stopped answering: nothing from it for ${quiet} s while requests waited (stopped, frozen or wedged)`,
              );
            });
            conn.on('close', () => {
              if (sb.conn !== conn) return;
              sb.conn = null;
              deps.exits.connectionLost(sb);
            });
            resolveConnected();
            if (first && expect)
              // Its set-up answers it, under the spawn's own deadline: not the liveness watchdog's business.
              conn
                .request('ping', {}, { watchdog: false, timeoutMs: 0 })
                .then(() => settle.resolve(), settle.reject);
            socket.uncork();
          } catch (e) {
            log.warn({ sandbox: sb.id, err: String(e) }, 'could not adopt agent connection');
            socket.destroy();
            if (first && expect) settle.reject(e);
          }
        })();
      },
    });
    // Wrapped: an awaited promise of a promise would wait for readiness itself.
    return { ready };
  }

  return { serve };
}
