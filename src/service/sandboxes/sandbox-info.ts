/** A sandbox record as the API shows it. */
import { PORTS } from '../../domain/limits.ts';
import { formatNetwork } from '../../domain/network.ts';
import { runtimeKind } from '../../domain/runtime-id.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { PortInfo, SandboxInfo } from '../api.ts';
import { capabilitiesOf, type RuntimeChoice, runtimeOfSandbox } from './runtime-choice.ts';

/** A published port as the API shows it. */
export const portInfo = (p: { port: number; hostPort: number }): PortInfo => ({
  port: p.port,
  hostPort: p.hostPort,
  address: `${PORTS.publishHost}:${p.hostPort}`,
});

/**
 * `runtime`: the daemon's, to say which of its runtimes made the sandbox and what that one can do; without
 * it, only the name its record holds.
 */
export function info(rec: SandboxRecord, children: string[] = [], runtime?: RuntimeChoice): SandboxInfo {
  const made = runtime ? runtimeOfSandbox(runtime, rec) : runtimeKind(rec);
  return {
    id: rec.id,
    name: rec.name,
    namespace: rec.namespace,
    state: rec.state,
    image: rec.image,
    parentId: rec.parentId,
    depth: rec.depth,
    limits: rec.limits,
    labels: rec.labels,
    createdAt: new Date(rec.createdAt).toISOString(),
    expiresAt: rec.expiresAt === null ? null : new Date(rec.expiresAt).toISOString(),
    endReason: rec.endReason,
    persistent: rec.session === null,
    children,
    network: formatNetwork(rec.network),
    ...(rec.ports?.length ? { ports: rec.ports.map(portInfo) } : {}),
    runtime: made,
    ...(runtime ? { capabilities: capabilitiesOf(runtime, made) } : {}),
  };
}
