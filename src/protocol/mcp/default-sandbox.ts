/**
 * The default sandbox: the one a per-sandbox tool uses when called without `sandbox`. Its scope is
 * chosen by the transport (one stdio connection, one HTTP session, one token), which hands the server
 * a holder; the server creates the sandbox lazily on first use and re-creates it if it was killed.
 */
import { isForkboxError } from '../../domain/errors.ts';
import type { ForkboxApi } from '../../service/api.ts';

export interface DefaultSandbox {
  get(): string | undefined;
  set(id: string): void;
  /**
   * The creation in flight, if any. Lives on the holder (not the server) because an HTTP transport
   * builds a server per request: concurrent first calls must still share one sandbox.
   */
  creating?: Promise<string> | undefined;
  /**
   * Who the default sandbox belongs to when it must outlive this holder (stateless HTTP: the token).
   * The sandbox then carries it in DEFAULT_OWNER_LABEL, and a holder that knows no id yet — a new
   * daemon after a restart, whose in-memory holders are gone — adopts that sandbox instead of creating
   * a second one, so a client calling without `sandbox` finds its files and REPL state again.
   */
  owner?: string | undefined;
}

/**
 * Label put on default sandboxes, so `sandbox_list` (and people) can tell them apart. Forks never
 * inherit it nor the owner label (ROLE_LABEL_PREFIXES in service/lineage/lineage.ts).
 */
export const DEFAULT_LABEL = 'forkbox.mcp-default';
/** Label holding a default sandbox's owner key (see DefaultSandbox.owner). */
export const DEFAULT_OWNER_LABEL = 'forkbox.mcp-default-owner';

/** A default-sandbox holder in memory (for one stdio connection, one HTTP session, one test). */
export function createDefaultSandbox(initial?: string, opts: { owner?: string } = {}): DefaultSandbox {
  let id = initial;
  return {
    get: () => id,
    set: (v) => {
      id = v;
    },
    creating: undefined,
    owner: opts.owner,
  };
}

const USABLE = new Set(['running', 'paused', 'creating']);

/**
 * Returns `resolve(arg)`: `arg` itself when given, else the default sandbox's id, creating it when there
 * is none or the recorded one has ended. Concurrent first calls share one creation (not two sandboxes).
 */
export function createSandboxResolver(
  api: ForkboxApi,
  defaults: DefaultSandbox,
): (arg: string | undefined) => Promise<string> {
  async function usable(id: string): Promise<boolean> {
    try {
      return USABLE.has((await api.getSandbox(id)).state);
    } catch (e) {
      if (isForkboxError(e) && (e.code === 'not_found' || e.code === 'sandbox_gone')) return false;
      throw e;
    }
  }

  async function ensure(): Promise<string> {
    const current = defaults.get();
    if (current !== undefined && (await usable(current))) return current;
    const labels: Record<string, string> = { [DEFAULT_LABEL]: 'true' };
    if (defaults.owner !== undefined) {
      labels[DEFAULT_OWNER_LABEL] = defaults.owner;
      // Only when this holder never had one: a default sandbox that was killed is replaced, not revived.
      if (current === undefined) {
        // A default sandbox is made by sandbox creation, never by a fork: a parent means a fork that
        // carries the labels from before forks stopped inheriting them, not this owner's sandbox.
        const [adopt] = (await api.listSandboxes({ labels }))
          .filter((s) => USABLE.has(s.state) && s.parentId === null)
          .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
        if (adopt) {
          defaults.set(adopt.id);
          return adopt.id;
        }
      }
    }
    const sb = await api.createSandbox({ labels });
    defaults.set(sb.id);
    return sb.id;
  }

  return async (arg) => {
    if (arg !== undefined) return arg;
    if (!defaults.creating) {
      defaults.creating = ensure().finally(() => {
        defaults.creating = undefined;
      });
    }
    return defaults.creating;
  };
}
