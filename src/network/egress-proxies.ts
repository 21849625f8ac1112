/**
 * The daemon's egress proxies, one per live sandbox with an `allow` policy, by sandbox id. The runtime
 * opens one when it makes such a sandbox (create, fork, restore: the policy is inherited) and closes it
 * when it releases the sandbox; every decision goes to `onDecision` (metrics, the audit log).
 */
import { join } from 'node:path';
import type { NetworkPolicy } from '../domain/network.ts';
import { type EgressDecision, type EgressProxy, openEgressProxy } from './egress-proxy.ts';
import type { Resolver } from './egress-resolve.ts';

export const PROXY_SOCKET_NAME = 'net.sock';

export interface EgressProxies {
  /** Open the proxy of sandbox `id` in its host inbox dir (replacing one left open). */
  open(id: string, inboxDir: string, policy: NetworkPolicy): Promise<void>;
  /** Close sandbox `id`'s proxy (no-op without one). */
  close(id: string): void;
  /** Close every proxy (daemon stop). */
  closeAll(): void;
}

export function createEgressProxies(opts: {
  resolve: Resolver;
  onDecision: (d: EgressDecision) => void;
}): EgressProxies {
  const proxies = new Map<string, EgressProxy>();
  return {
    async open(id, inboxDir, policy) {
      proxies.get(id)?.close();
      proxies.delete(id);
      if (policy.mode !== 'allow') return;
      const p = await openEgressProxy({
        sandbox: id,
        socketPath: join(inboxDir, PROXY_SOCKET_NAME),
        policy,
        resolve: opts.resolve,
        onDecision: opts.onDecision,
      });
      proxies.set(id, p);
    },
    close(id) {
      proxies.get(id)?.close();
      proxies.delete(id);
    },
    closeAll() {
      for (const p of proxies.values()) p.close();
      proxies.clear();
    },
  };
}
