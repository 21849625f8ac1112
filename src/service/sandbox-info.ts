/** A sandbox record as the API shows it. */
import { formatNetwork } from '../domain/network.ts';
import type { SandboxRecord } from '../domain/types.ts';
import type { SandboxInfo } from './api.ts';

export function info(rec: SandboxRecord, children: string[] = []): SandboxInfo {
  return {
    id: rec.id,
    name: rec.name,
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
  };
}
