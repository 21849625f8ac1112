/** Who is calling, and finding the sandboxes a caller may see. */
import { errors, ForkboxError } from '../domain/errors.ts';
import { ALL_NAMESPACES, checkNamespace, DEFAULT_NAMESPACE, splitRef } from '../domain/namespace.ts';
import type { SandboxRecord } from '../domain/types.ts';
import type { Store } from './ports.ts';

export const DEFAULT_TENANT = 'default';

/** Who is calling: the tenant whose sandboxes they see, and the client session new sandboxes belong to. */
export interface CallerContext {
  tenant: string;
  session?: string;
  /** Calling through the TCP listener (a token's tenant), not the host's own socket. */
  remote?: boolean;
  /**
   * The namespaces the caller may act in (a token limited to namespaces); the first is its default.
   * Absent: every namespace, default `default`. A sandbox of another namespace is not found.
   */
  namespaces?: readonly string[];
  /**
   * The warm pool's own creates (tenant POOL_TENANT): the tenant the sandbox is made for, whose templates
   * it comes from and who alone may take it (service/warm-pool.ts).
   */
  poolFor?: string;
}

/**
 * Refuses a host-wide operation (gc, df, image builds, imports and removals, template definitions) to any
 * caller but the host's own tenant: its effects reach every tenant's sandboxes and the host's disk.
 */
export function requireHostTenant(ctx: CallerContext, what: string, onHost: string): void {
  if (ctx.tenant === DEFAULT_TENANT) return;
  throw new ForkboxError(
    'permission_denied',
    `${what} acts on the whole host, so only the host's own tenant may do it: run '${onHost}' on the host.`,
    { tenant: ctx.tenant },
  );
}

/** The namespace a caller's unqualified names and new sandboxes are in. */
export function defaultNamespace(ctx: CallerContext): string {
  return ctx.namespaces?.[0] ?? DEFAULT_NAMESPACE;
}

/** Whether the caller may see and act in namespace `ns` (every namespace when its token names none). */
export const mayUseNamespace = (ctx: Pick<CallerContext, 'namespaces'>, ns: string) =>
  ctx.namespaces === undefined || ctx.namespaces.includes(ns);

/** The namespace a create (or a kill by name) acts in: the one asked for, checked, or the caller's default. */
export function namespaceFor(ctx: CallerContext, asked: string | undefined): string {
  const ns = asked === undefined ? defaultNamespace(ctx) : checkNamespace(asked);
  if (!mayUseNamespace(ctx, ns)) {
    throw new ForkboxError(
      'permission_denied',
      `this token may act only in the namespaces ${ctx.namespaces?.join(', ')}: pick one of them.`,
      { namespace: ns },
    );
  }
  return ns;
}

/**
 * The namespaces a list or metrics call covers: `*` = every one the caller may see (undefined: no
 * filter), a name = that one (none when the caller may not see it), absent = the caller's default.
 */
export function namespacesFor(ctx: CallerContext, asked: string | undefined): readonly string[] | undefined {
  if (asked === ALL_NAMESPACES) return ctx.namespaces;
  const ns = asked === undefined ? defaultNamespace(ctx) : checkNamespace(asked);
  return mayUseNamespace(ctx, ns) ? [ns] : [];
}

export interface SandboxFinder {
  /**
   * A sandbox of this tenant by id, name (in the caller's default namespace) or `namespace/name`; another
   * tenant's sandbox, or one in a namespace the caller may not use, is reported as not found.
   */
  find(ctx: CallerContext, idOrName: string): SandboxRecord;
  /** Like find, and it must be running. */
  running(ctx: CallerContext, idOrName: string): SandboxRecord;
}

export function createSandboxFinder(store: Store): SandboxFinder {
  function find(ctx: CallerContext, idOrName: string): SandboxRecord {
    const { namespace, ref } = splitRef(idOrName);
    const visible = (r: SandboxRecord | undefined) =>
      r !== undefined &&
      r.tenant === ctx.tenant &&
      mayUseNamespace(ctx, r.namespace) &&
      (namespace === undefined || r.namespace === namespace);
    const byId = store.getSandbox(ref);
    let rec: SandboxRecord | undefined = visible(byId)
      ? byId
      : store.getSandboxByName(ref, ctx.tenant, namespace ?? defaultNamespace(ctx));
    if (rec && !visible(rec)) rec = undefined;
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
