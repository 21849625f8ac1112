/**
 * Merging a winning fork into its ancestor: the ancestor's record takes the winner's processes (by
 * runtime id), its old processes move to a hidden record that is killed, the winner's id becomes an
 * alias (docs/ARCHITECTURE.md, "Runtime ids").
 */
import { randomBytes } from 'node:crypto';
import { errors } from '../../domain/errors.ts';
import { runtimeId } from '../../domain/runtime-id.ts';
import { isLive } from '../../domain/sandbox-state.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { MergeResult, SandboxInfo } from '../api.ts';
import type { Store } from '../ports.ts';
import type { CallerRef } from './lineage-fork.ts';
import { nsParentOf } from './lineage-kill.ts';

/** Label on the hidden record that keeps a merged parent's old processes until they end. */
export const MERGED_LABEL = 'forkbox.merged-into';

export interface MergeDeps {
  store: Store;
  now: () => number;
  serial<T>(id: string, fn: () => Promise<T>): Promise<T>;
  kill(rec: SandboxRecord, reason: string): Promise<SandboxRecord>;
  withKids(rec: SandboxRecord): SandboxInfo;
}

export function createMerger(deps: MergeDeps) {
  const { store, now, serial, kill, withKids } = deps;

  async function merge(_ctx: CallerRef, parent: SandboxRecord, winner: SandboxRecord): Promise<MergeResult> {
    if (parent.id === winner.id) {
      throw errors.invalid(
        `cannot merge sandbox '${parent.id}' into itself. Name a fork of it as the winner.`,
      );
    }
    if (winner.state !== 'running') throw errors.sandboxNotRunning(winner.id, winner.state);
    if (!isLive(parent.state)) throw errors.sandboxNotRunning(parent.id, parent.state);
    const chain: string[] = [];
    for (let p = winner.parentId; p !== null; p = store.getSandbox(p)?.parentId ?? null) {
      chain.push(p);
      if (chain.length > 64) break;
    }
    if (!chain.includes(parent.id)) {
      throw errors.invalid(
        `'${parent.id}' is not an ancestor of '${winner.id}' (whose parent is ${winner.parentId ?? 'none'}). Merge a fork into the sandbox it was forked from, or into one of that sandbox's ancestors.`,
        { parent: parent.id, winner: winner.id },
      );
    }
    return serial(parent.id, () =>
      serial(winner.id, async () => {
        const t = now();
        // The parent's old processes move to a hidden record: its PID 1 may have to stay as a tombstone,
        // since the winner (and its siblings) live inside its pid namespace.
        const old: SandboxRecord = {
          ...parent,
          id: `sb-${randomBytes(5).toString('hex')}`,
          state: 'running',
          labels: { ...parent.labels, [MERGED_LABEL]: parent.id },
          session: null,
          // Its host ports close with it (the runtime's listeners are its processes'): none to re-open.
          ports: [],
          expiresAt: null,
          runtime: { ...parent.runtime, rid: runtimeId(parent) },
          createdAt: t,
          updatedAt: t,
        };
        old.name = old.id;
        const parentPaused = parent.state === 'paused';
        store.insertSandbox({ ...old, state: 'creating' });
        store.transitionSandbox(old.id, 'running');
        if (parentPaused) store.transitionSandbox(old.id, 'paused');
        for (const r of store.listSandboxes()) {
          if (r.id === old.id) continue;
          if (nsParentOf(r) === parent.id)
            store.updateSandbox(r.id, { runtime: { ...r.runtime, nsParent: old.id } });
        }
        const winnerNow = store.getSandbox(winner.id) as SandboxRecord;
        for (const r of store.listSandboxes()) {
          if (r.parentId === winner.id || nsParentOf(r) === winner.id) {
            store.updateSandbox(r.id, {
              parentId: r.parentId === winner.id ? parent.id : r.parentId,
              runtime: nsParentOf(r) === winner.id ? { ...r.runtime, nsParent: parent.id } : r.runtime,
            });
          }
        }
        // The parent's record now names the winner's processes.
        const merged = store.updateSandbox(parent.id, {
          runtime: { ...winnerNow.runtime, rid: runtimeId(winnerNow) },
          hostPid: winnerNow.hostPid,
          templateId: winnerNow.templateId,
          depth: winnerNow.depth,
          limits: winnerNow.limits,
          env: winnerNow.env,
          // The runtime's listeners are the processes': the winner's host ports go on serving (now as the
          // parent's), the parent's own close with its old processes (mergeSandbox re-publishes the ports
          // the winner lacked).
          ports: winnerNow.ports ?? [],
        });
        if (parentPaused) store.transitionSandbox(parent.id, 'running');
        store.transitionSandbox(winner.id, 'killing');
        store.transitionSandbox(winner.id, 'killed', {
          endReason: `merged into ${parent.id}`,
          hostPid: null,
          runtime: { aliasOf: parent.id },
        });
        return merged;
      }),
    ).then(async (merged) => {
      const old = store
        .listSandboxes({ states: ['running', 'paused'] })
        .find((r) => r.labels[MERGED_LABEL] === parent.id && runtimeId(r) === runtimeId(parent));
      if (old) await kill(old, `replaced by its fork ${winner.id} (merge)`);
      return { sandbox: withKids(store.getSandbox(merged.id) as SandboxRecord), winner: winner.id };
    });
  }

  return merge;
}
