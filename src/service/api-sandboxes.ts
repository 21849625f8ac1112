/** The sandbox part of the API for one caller: lifecycle, lineage, snapshots, diff. */
import { errors, ForkboxError } from '../domain/errors.ts';
import { isLive } from '../domain/sandbox-state.ts';
import type { SandboxRecord } from '../domain/types.ts';
import type { ForkResult, SandboxApi, SandboxInfo, SystemStatus } from './api.ts';
import { replayBrowser } from './browser/browser-fork.ts';
import { type CallerContext, DEFAULT_TENANT, namespaceFor, namespacesFor } from './caller.ts';
import { applyProjectOf, diffSandboxRecords } from './diff/diff.ts';
import type { EngineParts } from './engine-parts.ts';
import { MERGED_LABEL } from './lineage/lineage.ts';
import { defaultRuntime, offeredRuntimes } from './sandboxes/runtime-choice.ts';
import { info } from './sandboxes/sandbox-info.ts';
import { checkPorts, portInfo } from './sandboxes/sandbox-ports.ts';
import { SNAPSHOT_LABEL } from './snapshots/snapshots.ts';
import { checkTtl } from './validate.ts';

export function sandboxApi(p: EngineParts, ctx: CallerContext): SandboxApi {
  const { store, runtime, snapshots } = p;
  const find = (idOrName: string) => p.find(ctx, idOrName);
  const running = (idOrName: string) => p.running(ctx, idOrName);
  /** The record as the API shows it: with its live children, its runtime and what that can do. */
  const withKids = (rec: SandboxRecord): SandboxInfo => info(rec, p.withKids(rec).children, runtime);
  const diffDeps = {
    runtime,
    store,
    find,
    findSnapshot: (idOrName: string) => snapshots.find(ctx, idOrName),
  };
  /** A fork's or restore's new sandboxes publish `ports` (each on a host port of its own). */
  async function withPorts(out: ForkResult, ports: number[]): Promise<ForkResult> {
    const kids = out.children.flatMap((c) => (c.ok && c.sandbox ? [c.sandbox.id] : []));
    if (ports.length === 0 || kids.length === 0) return out;
    await p.ports.inherit(ports, kids);
    return {
      ...out,
      children: out.children.map((c) => {
        const rec = c.sandbox && store.getSandbox(c.sandbox.id);
        return rec ? { ...c, sandbox: withKids(rec) } : c;
      }),
    };
  }
  return {
    async status(): Promise<SystemStatus> {
      // One GROUP BY over the (tenant, state) index: the ended history is not read row by row.
      const counts = store.countSandboxesByState(ctx.tenant, ctx.namespaces);
      return {
        version: p.version,
        runtime: runtime.name,
        capabilities: runtime.capabilities,
        // The default first: a create that names none gets it.
        runtimes: [
          defaultRuntime(runtime),
          ...offeredRuntimes(runtime).filter((n) => n !== defaultRuntime(runtime)),
        ],
        stateDir: p.stateDir,
        sandboxes: counts,
        // A tenant's own templates (each tenant has its own: runtimes name the group they were made for);
        // the host's tenant, which runs the host, counts them all.
        templates: store
          .listTemplates()
          .filter((t) => ctx.tenant === DEFAULT_TENANT || t.runtime.group === ctx.tenant).length,
      };
    },

    async createSandbox(req, opts) {
      const ports = checkPorts(req.ports);
      const rec = await p.create(ctx, req, undefined, opts);
      if (ports.length === 0) return withKids(rec);
      try {
        return withKids(await p.ports.publishAll(rec, ports));
      } catch (e) {
        await p.kill(rec, 'its ports could not be published').catch(() => undefined);
        throw e;
      }
    },

    async listSandboxes(opts) {
      const filter = opts?.all ? {} : { states: ['creating', 'running', 'paused', 'killing'] as const };
      const namespaces = namespacesFor(ctx, opts?.namespace);
      const recs = store.listSandboxes({
        ...filter,
        tenant: ctx.tenant,
        ...(namespaces ? { namespaces } : {}),
        ...(opts?.labels ? { labels: opts.labels } : {}),
      });
      const kids = new Map<string, string[]>();
      for (const r of store.listSandboxes({
        states: ['creating', 'running', 'paused'],
        tenant: ctx.tenant,
      })) {
        if (r.parentId) kids.set(r.parentId, [...(kids.get(r.parentId) ?? []), r.id]);
      }
      // Snapshot holders and a merged parent's old processes are the engine's, not the caller's: shown
      // only to whoever asks for them by their label.
      const hidden = [SNAPSHOT_LABEL, MERGED_LABEL].filter((l) => !(opts?.labels && l in opts.labels));
      return recs
        .filter((r) => hidden.every((l) => r.labels[l] === undefined))
        .map((r) => info(r, kids.get(r.id) ?? [], runtime));
    },

    async getSandbox(idOrName, opts) {
      const rec = find(idOrName);
      const out = withKids(rec);
      if (opts?.usage && (rec.state === 'running' || rec.state === 'paused'))
        out.usage = await runtime.usage(rec);
      return out;
    },

    async killSandbox(idOrName, opts) {
      const qualified = opts?.namespace !== undefined && !idOrName.includes('/');
      const rec = find(qualified ? `${namespaceFor(ctx, opts.namespace)}/${idOrName}` : idOrName);
      return withKids(
        await (opts?.cascade ? p.killTree(rec, 'killed on request') : p.kill(rec, 'killed on request')),
      );
    },

    async forkSandbox(idOrName, req) {
      const source = running(idOrName);
      const out = await replayBrowser(p, ctx, source, await p.fork(ctx, source, req));
      return withPorts(
        out,
        (source.ports ?? []).map((x) => x.port),
      );
    },
    async mergeSandbox(parentId, winnerId) {
      const parent = find(parentId);
      const out = await p.merge(ctx, parent, find(winnerId));
      // The merged parent serves on the winner's host ports; a port only the parent had gets a new one.
      const kept = new Set((out.sandbox.ports ?? []).map((x) => x.port));
      const lost = (parent.ports ?? []).map((x) => x.port).filter((x) => !kept.has(x));
      if (lost.length > 0) await p.ports.inherit(lost, [parent.id]);
      return { ...out, sandbox: withKids(store.getSandbox(parent.id) ?? parent) };
    },

    createSnapshot: async (idOrName, opts) => snapshots.create(ctx, running(idOrName), opts?.name),
    listSnapshots: async () => snapshots.list(ctx),
    getSnapshot: async (idOrName) => snapshots.get(ctx, idOrName),
    deleteSnapshot: async (idOrName, opts) => snapshots.remove(ctx, idOrName, opts?.cascade === true),
    async restoreSnapshot(idOrName, req) {
      const ports = snapshots.portsOf(ctx, idOrName);
      return withPorts(await snapshots.restore(ctx, idOrName, req ?? {}), ports);
    },
    async diffSandboxes(a, b, opts) {
      const { limit, cursor, ...req } = opts ?? {};
      if (cursor !== undefined) return p.diffPages.next(ctx.tenant, cursor, limit);
      return p.heavy.run(ctx.tenant, 'diff', () =>
        p.diffPages.first(ctx.tenant, limit, () => diffSandboxRecords(diffDeps, a, b, req)),
      );
    },
    applyProject: (idOrName) => applyProjectOf(diffDeps, idOrName),
    async exposePort(idOrName, port, opts) {
      const rec = await p.ports.publish(running(idOrName), port, opts?.hostPort ?? 0);
      const got = (rec.ports ?? []).find((x) => x.port === port);
      if (!got) throw new ForkboxError('internal', `port ${port} was published but not recorded.`);
      return portInfo(got);
    },
    listPorts: async (idOrName) => (find(idOrName).ports ?? []).map(portInfo),
    connectPort: (idOrName, port) => p.ports.connect(running(idOrName), port),

    async pauseSandbox(idOrName) {
      const rec = find(idOrName);
      return p.lifecycle.run(rec.id, async () => {
        const cur = running(rec.id);
        await runtime.pauseSandbox(cur);
        return withKids(store.transitionSandbox(cur.id, 'paused'));
      });
    },

    async resumeSandbox(idOrName) {
      const rec = find(idOrName);
      return p.lifecycle.run(rec.id, async () => {
        const cur = find(rec.id);
        if (cur.state === 'running') return withKids(cur);
        if (cur.state !== 'paused') throw errors.sandboxNotRunning(cur.id, cur.state);
        await runtime.resumeSandbox(cur);
        return withKids(store.transitionSandbox(cur.id, 'running'));
      });
    },

    async extendSandbox(idOrName, ttlSeconds) {
      const rec = find(idOrName);
      if (!isLive(rec.state)) throw errors.sandboxNotRunning(rec.id, rec.state);
      const ttl = checkTtl(ttlSeconds) ?? 0;
      return withKids(store.updateSandbox(rec.id, { expiresAt: p.now() + ttl * 1000 }));
    },
  };
}
