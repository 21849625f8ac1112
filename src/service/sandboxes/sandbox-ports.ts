/**
 * Published ports, the service side: a server on a sandbox's loopback reachable from the host on
 * 127.0.0.2:<host port> (the runtime listens and relays: RuntimePorts). The ports live on the record
 * (`ports`, re-opened on the same host ports after a daemon restart); a fork's children get the source's
 * ports on host ports of their own; the runtime closes them when the sandbox ends.
 */
import type { Duplex } from 'node:stream';
import { errors, ForkboxError } from '../../domain/errors.ts';
import { LIMITS, PORTS } from '../../domain/limits.ts';
import type { Logger } from '../../domain/logger.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { Runtime, RuntimePorts, Store } from '../ports.ts';
import { checkBound } from '../validate.ts';

export { portInfo } from './sandbox-info.ts';

/** A create's `ports` list, checked: each in range, no repeats, at most PORTS.perSandbox. */
export function checkPorts(ports: number[] | undefined): number[] {
  if (ports === undefined) return [];
  if (ports.length > PORTS.perSandbox)
    throw errors.invalid(`ports lists at most ${PORTS.perSandbox} ports (got ${ports.length}).`, {
      ports: ports.length,
    });
  for (const p of ports) checkBound(LIMITS.port, p);
  return [...new Set(ports)];
}

export interface SandboxPorts {
  /** Publishes `port` of a running sandbox (hostPort 0: a free one) and records it. */
  publish(rec: SandboxRecord, port: number, hostPort?: number): Promise<SandboxRecord>;
  /** Publishes each of `ports` on a free host port, one after another; the record after the last. */
  publishAll(rec: SandboxRecord, ports: number[]): Promise<SandboxRecord>;
  /** Publishes `ports` on each new sandbox in `children`, on host ports of its own (failures are logged). */
  inherit(ports: readonly number[], children: string[]): Promise<void>;
  /** After a restart: re-opens every running sandbox's ports, on their host ports when still free. */
  reopen(): Promise<void>;
  /** A connection to a published port of a running sandbox (the HTTP listener's proxy). */
  connect(rec: SandboxRecord, port: number): Promise<Duplex>;
}

export function createSandboxPorts(deps: { store: Store; runtime: Runtime; log: Logger }): SandboxPorts {
  const { store, runtime, log } = deps;

  function rt(): RuntimePorts {
    if (!runtime.ports)
      throw new ForkboxError('requirement_missing', `the ${runtime.name} runtime cannot publish ports.`);
    return runtime.ports;
  }

  /** Publish `port` of a running sandbox (hostPort 0: a free one) and record it. */
  async function publish(rec: SandboxRecord, port: number, hostPort = 0): Promise<SandboxRecord> {
    checkBound(LIMITS.port, port);
    if (hostPort !== 0) checkBound(LIMITS.hostPort, hostPort);
    if (rec.state !== 'running') throw errors.sandboxNotRunning(rec.id, rec.state);
    const got = await rt().publish(rec, port, hostPort);
    const cur = store.getSandbox(rec.id) ?? rec;
    const others = (cur.ports ?? []).filter((p) => p.port !== port);
    return store.updateSandbox(rec.id, { ports: [...others, { port, hostPort: got }] });
  }

  return {
    publish,

    async publishAll(rec: SandboxRecord, ports: number[]): Promise<SandboxRecord> {
      let cur = rec;
      for (const port of ports) cur = await publish(cur, port);
      return cur;
    },

    /**
     * New sandboxes get `ports` (a fork's children: its source's; a snapshot's restores: the ports its
     * source had), each on a host port of the child's own.
     */
    async inherit(ports: readonly number[], children: string[]): Promise<void> {
      if (ports.length === 0) return;
      for (const id of children) {
        const child = store.getSandbox(id);
        if (!child) continue;
        let cur = child;
        for (const port of ports) {
          try {
            cur = await publish(cur, port);
          } catch (e) {
            log.warn({ sandbox: id, port, err: String(e) }, 'could not publish an inherited port');
          }
        }
      }
    },

    async reopen(): Promise<void> {
      if (!runtime.ports) return;
      for (const rec of store.listSandboxes({ states: ['running'] })) {
        for (const p of rec.ports ?? []) {
          try {
            await publish(rec, p.port, p.hostPort).catch(() => publish(rec, p.port));
          } catch (e) {
            log.warn({ sandbox: rec.id, port: p.port, err: String(e) }, 'could not re-open a published port');
          }
        }
      }
    },

    async connect(rec: SandboxRecord, port: number): Promise<Duplex> {
      checkBound(LIMITS.port, port);
      if (rec.state !== 'running') throw errors.sandboxNotRunning(rec.id, rec.state);
      if (!(rec.ports ?? []).some((p) => p.port === port))
        throw new ForkboxError(
          'not_found',
          `port ${port} of sandbox '${rec.id}' is not published: publish it first (port_expose, forkbox port ${rec.id} ${port}).`,
          { sandbox: rec.id, port },
        );
      return rt().connect(rec, port);
    },
  };
}
