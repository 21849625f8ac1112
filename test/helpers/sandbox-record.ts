/** A sandbox record as the store holds one, for tests of the store itself. */
import { NETWORK_NONE } from '../../src/domain/network.ts';
import type { SandboxRecord } from '../../src/domain/types.ts';

export function sandboxRecord(id: string, over: Partial<SandboxRecord> = {}): SandboxRecord {
  return {
    id,
    name: id,
    tenant: 'default',
    namespace: 'default',
    session: null,
    state: 'creating',
    image: 'debian',
    templateId: 'tpl-1',
    parentId: null,
    depth: 0,
    limits: { memoryBytes: 1 << 28, pids: 64, cpus: 1, diskBytes: 1 << 30, diskInodes: 10_000 },
    env: {},
    labels: {},
    expiresAt: null,
    createdAt: 1000,
    updatedAt: 1000,
    hostPid: null,
    runtime: {},
    endReason: null,
    network: NETWORK_NONE,
    ...over,
  };
}
