/** Who is calling, and finding the sandboxes a caller may see. */
import { errors } from '../domain/errors.ts';
import type { SandboxRecord } from '../domain/types.ts';
import type { Store } from './ports.ts';

export const DEFAULT_TENANT = 'default';

/** Who is calling: the tenant whose sandboxes they see, and the client session new sandboxes belong to. */
export interface CallerContext {
  tenant: string;
  session?: string;
  /** Calling through the TCP listener (a token's tenant), not the host's own socket. */
  remote?: boolean;
}

export interface SandboxFinder {
  /** A sandbox of this tenant by id or name; another tenant's sandbox is reported as not found. */
  find(ctx: CallerContext, idOrName: string): SandboxRecord;
  /** Like find, and it must be running. */
  running(ctx: CallerContext, idOrName: string): SandboxRecord;
}

export function createSandboxFinder(store: Store): SandboxFinder {
  function find(ctx: CallerContext, idOrName: string): SandboxRecord {
    const byId = store.getSandbox(idOrName);
    let rec = byId && byId.tenant === ctx.tenant ? byId : store.getSandboxByName(idOrName, ctx.tenant);
    // A merged winner's old id answers as the sandbox it was merged into.
    const alias = rec?.runtime.aliasOf;
    if (rec && typeof alias === 'string') rec = store.getSandbox(alias) ?? rec;
    if (!rec) throw errors.sandboxNotFound(idOrName);
    return rec;
  }
  return {
    find,
    running(ctx, idOrName) {
      const rec = find(ctx, idOrName);
      if (rec.state !== 'running') throw errors.sandboxNotRunning(rec.id, rec.state);
      return rec;
    },
  };
}
