/** A sandbox record as the API shows it. */
import { PORTS } from '../../domain/limits.ts';
import { formatNetwork } from '../../domain/network.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { PortInfo, SandboxInfo } from '../api.ts';

/** A published port as the API shows it. */
export const portInfo = (p: { port: number; hostPort: number }): PortInfo => ({
  port: p.port,
  hostPort: p.hostPort,
  address: `${PORTS.publishHost}:${p.hostPort}`,
});

export function info(rec: SandboxRecord, children: string[] = []): SandboxInfo {
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
  };
}
