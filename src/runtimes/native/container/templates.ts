/**
 * Templates: long-lived runc containers per (image, template config, tenant) whose PID 1 is the agent with
 * a warm REPL worker. Every unrelated sandbox is forked from a template's worker into a user namespace and
 * a block of host uids of its own (docs/ARCHITECTURE.md, "Templates"); a template serves one tenant only,
 * since what the kernel counts per user is counted per template range (docs/SECURITY.md). A template whose
 * blocks are all taken gets a sibling with a range of its own. Starting one is template-start.ts; this
 * keeps the running ones.
 */

import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../../domain/logger.ts';
import type { ImageRecord, TemplateRecord } from '../../../domain/types.ts';
import type { Store } from '../../../service/ports.ts';
import { createAgentConnection } from '../agent-link/agent-connection.ts';
import type { AgentTimeouts } from '../agent-link/agent-timeouts.ts';
import type { InboxHub } from '../agent-link/inbox-hub.ts';
import { deadline } from '../host/deadline.ts';
import type { Mounts } from '../host/mounts.ts';
import type { NativePaths } from '../host/paths.ts';
import { isRunning } from '../host/proc.ts';
import type { UidRange } from '../host/uid-range.ts';
import { BLOCK_SIZE, type UidRanges } from '../host/uid-ranges.ts';
import { makeUserNamespaces } from '../host/userns-maker.ts';
import { installAgent } from './agent-install.ts';
import { agentStart } from './agent-runtime.ts';
import { runProcess } from './runc.ts';
import { seccompProfile } from './seccomp.ts';
import { createTemplateBlocks } from './template-blocks.ts';
import { blockIdmapSpecs, newTemplateId, startTemplate, type TemplateHandle } from './template-start.ts';

export { installAgent } from './agent-install.ts';
export type { TemplateHandle } from './template-start.ts';

/** The uid range a template record was started with (none: a template from before ranges). */
function rangeOf(rec: TemplateRecord | undefined): UidRange | null {
  const r = rec?.runtime.range as { hostStart?: unknown; size?: unknown } | undefined;
  return r && typeof r.hostStart === 'number' && typeof r.size === 'number'
    ? { hostStart: r.hostStart, size: r.size }
    : null;
}

/** How long a template without sandboxes stays (a tenant's, or a host's second of one config), ms. */
export const TEMPLATE_IDLE_MS = 10 * 60_000;
/** The host's own tenant (the local socket's), whose first template of each config is kept warm. */
const HOST_GROUP = 'default';

const SECCOMP_KEY = createHash('sha256').update(JSON.stringify(seccompProfile())).digest('hex').slice(0, 12);

export interface TemplateDeps {
  paths: NativePaths;
  mounts: Mounts;
  hub: InboxHub;
  store: Store;
  log: Logger;
  /** The ids layers are stored with (container id N = host id hostStart + N). */
  uidRange: UidRange;
  /** The host-wide registry of template uid ranges. */
  ranges: UidRanges;
  runc: string;
  /** Modules every template pre-imports, before those of its own config (runtime-wide). */
  prewarm: string[];
  timeouts?: AgentTimeouts;
  startTimeoutMs?: number;
  /** Exempt a template's PID 1 from the OOM killer where the host allows it (spawn/oom-order.ts). */
  exemptFromOom?: (pid: number) => void;
  /** The image whose Python runs the agent in images without python3 (agent-runtime.ts); undefined: not built. */
  runtimeImage?: () => ImageRecord | undefined;
  /** TEMPLATE_IDLE_MS unless given (tests). */
  idleMs?: number;
}

export interface Templates {
  /** A running template of this image, config and tenant with a block free, started on first use. */
  ensure(image: ImageRecord, prewarm: readonly string[], group: string): Promise<TemplateHandle>;
  /** The running template `id`, if this runtime holds it. */
  get(id: string): TemplateHandle | undefined;
  /** The running templates of (image, prewarm), none started; none when that is the image's default. */
  findDedicated(image: ImageRecord, prewarm: readonly string[]): TemplateHandle[];
  /** After a restart: re-listens for running templates' agents; removes those whose process is gone. */
  adopt(records: TemplateRecord[]): Promise<void>;
  /** Stops template `id` and gives back all it holds, its record included. */
  destroy(id: string): Promise<void>;
  /** The running templates. */
  list(): TemplateHandle[];
  /** Stops the templates unused for `idleMs` (bar the host's first of each config); returns their ids. */
  reapIdle(now?: number): Promise<string[]>;
}

export function createTemplates(deps: TemplateDeps): Templates {
  const { paths, mounts, hub, store, log } = deps;
  const handles = new Map<string, TemplateHandle>();
  const starting = new Map<string, Promise<TemplateHandle>>();
  /** When each template with a uid range was last seen without a sandbox. */
  const idleSince = new Map<string, number>();
  let agent: { dir: string; hash: string } | undefined;

  /**
   * The runtime-wide modules, then the config's, each once: the order the worker imports them in. None
   * for an image without python3: its worker only forks, it never runs user code.
   */
  function effectivePrewarm(image: ImageRecord, prewarm: readonly string[]): string[] {
    return image.python ? [...new Set([...deps.prewarm, ...prewarm])] : [];
  }

  function configKey(image: ImageRecord, prewarm: string[], group: string): string {
    agent ??= installAgent(paths);
    // The security profile is part of the key: a template started under an older seccomp profile (or
    // keyring set-up) is not reused for new sandboxes. So is the agent's runtime when the image has no
    // python3: a rebuilt default image gets new templates. And the tenant: a template serves one only.
    const key = {
      image: image.id,
      ...(image.python ? {} : { runtime: deps.runtimeImage?.()?.id ?? null }),
      agent: agent.hash,
      uid: { storage: deps.uidRange, ranges: 'v1' },
      prewarm,
      seccomp: SECCOMP_KEY,
      keyring: 'none',
      group,
    };
    return createHash('sha256').update(JSON.stringify(key)).digest('hex').slice(0, 24);
  }

  /** Listen on the template's control socket; each (re)connection becomes the template's connection. */
  function serve(h: TemplateHandle): { connected: Promise<void> } {
    let first: (() => void) | undefined;
    const connected = new Promise<void>((r) => {
      first = r;
    });
    void hub.listen(h.id, paths.controlSocket(h.id), {
      // While runc starts it, its pid is not known yet: only the hello check then.
      admits: (cred) =>
        h.hostPid === 0 || cred.pid === h.hostPid ? null : `peer pid ${cred.pid} is not the template's PID 1`,
      verify(hello, cred) {
        if (hello.sandboxId !== h.id || hello.role !== 'template')
          throw new Error(`hello names ${hello.role} ${hello.sandboxId}`);
        if (cred.pid !== h.hostPid)
          throw new Error(`peer pid ${cred.pid} is not the template's PID 1 (${h.hostPid})`);
      },
      onAgent({ socket, hello }) {
        h.conn?.close();
        const conn = createAgentConnection(socket, hello, {
          log,
          ...(deps.timeouts ? { timeouts: deps.timeouts } : {}),
        });
        h.conn = conn;
        conn.on('close', () => {
          if (h.conn === conn) h.conn = null;
        });
        first?.();
      },
    });
    return { connected };
  }

  async function destroy(id: string): Promise<void> {
    const h = handles.get(id);
    handles.delete(id);
    h?.conn?.close();
    hub.close(id);
    h?.blocks?.close();
    const range = rangeOf(store.getTemplate(id)) ?? h?.blocks?.range;
    await runProcess(
      deps.runc,
      ['--root', paths.runcRoot, 'delete', '--force', id],
      join(paths.template(id), 'container.log'),
    ).catch(() => undefined);
    mounts.detachAllUnder(paths.inbox(id));
    mounts.detachAllUnder(paths.template(id));
    rmSync(paths.inbox(id), { recursive: true, force: true });
    rmSync(paths.template(id), { recursive: true, force: true });
    if (range) deps.ranges.release(range.hostStart);
  }

  async function start(
    image: ImageRecord,
    key: string,
    prewarm: string[],
    group: string,
  ): Promise<TemplateHandle> {
    const launch = agentStart(image, deps.runtimeImage?.());
    agent ??= installAgent(paths);
    const startDeps = { ...deps, agent, exemptFromOom: deps.exemptFromOom ?? (() => undefined), serve };
    const id = newTemplateId();
    try {
      const h = await startTemplate(startDeps, id, image, launch, key, { prewarm, group });
      handles.set(h.id, h);
      log.info({ template: h.id, image: image.name, pid: h.hostPid }, 'template started');
      return h;
    } catch (e) {
      await destroy(id).catch(() => undefined);
      if (store.getTemplate(id)) store.updateTemplate(id, { state: 'failed' });
      throw e;
    }
  }

  /**
   * A running template of (image, key) with a block free (`needBlock`), reconnected if need be; a dead one
   * is removed.
   */
  async function running(
    image: ImageRecord,
    key: string,
    needBlock: boolean,
  ): Promise<TemplateHandle | null> {
    for (const h of [...handles.values()]) {
      if (h.image !== image.name || store.getTemplate(h.id)?.configKey !== key) continue;
      if (needBlock && h.blocks && h.blocks.used() >= h.blocks.range.size / BLOCK_SIZE - 1) continue;
      if (!isRunning(h.hostPid, h.startTime)) {
        log.warn({ template: h.id }, 'template process is gone; starting a new one');
        await destroy(h.id).catch(() => undefined);
        store.deleteTemplate(h.id);
        continue;
      }
      if (!h.conn)
        await deadline<void>(
          5000,
          `template ${h.id}'s agent reconnecting`,
          (resolve) => void h.ready.then(resolve),
        );
      return h;
    }
    return null;
  }

  return {
    /**
     * A running template for this image whose worker pre-imported `prewarm` (started on first use).
     * A module that fails to import does not fail the template: the worker logs it and carries on.
     */
    async ensure(image: ImageRecord, prewarm: readonly string[], group: string): Promise<TemplateHandle> {
      const modules = effectivePrewarm(image, prewarm);
      const key = configKey(image, modules, group);
      const h = await running(image, key, true);
      if (h) return h;
      let p = starting.get(key);
      if (!p) {
        p = start(image, key, modules, group).finally(() => starting.delete(key));
        starting.set(key, p);
      }
      return p;
    },

    get(id: string): TemplateHandle | undefined {
      return handles.get(id);
    },

    /**
     * The running template of (image, prewarm), without starting one; null when there is none or when
     * it is also the image's default template (its config adds nothing to the runtime-wide modules).
     */
    findDedicated(image: ImageRecord, prewarm: readonly string[]): TemplateHandle[] {
      const out: TemplateHandle[] = [];
      for (const h of handles.values()) {
        const key = configKey(image, effectivePrewarm(image, prewarm), h.group);
        if (key === configKey(image, effectivePrewarm(image, []), h.group)) continue;
        if (store.getTemplate(h.id)?.configKey === key) out.push(h);
      }
      return out;
    },

    async adopt(records: TemplateRecord[]): Promise<void> {
      for (const rec of records) {
        const startTime = typeof rec.runtime.startTime === 'number' ? rec.runtime.startTime : undefined;
        if (rec.state !== 'running' || rec.hostPid === null || !isRunning(rec.hostPid, startTime)) {
          if (rec.state === 'running')
            log.warn({ template: rec.id }, 'template process is gone; removing it');
          await destroy(rec.id).catch(() => undefined);
          store.deleteTemplate(rec.id);
          continue;
        }
        const cgroup =
          typeof rec.runtime.cgroup === 'string' ? rec.runtime.cgroup : `/forkbox/templates/${rec.id}`;
        const range = rangeOf(rec);
        const h: TemplateHandle = {
          id: rec.id,
          image: rec.image,
          hostPid: rec.hostPid,
          startTime: startTime ?? 0,
          cgroup: cgroup.replace(/^\//, ''),
          conn: null,
          ready: Promise.resolve(),
          group: typeof rec.runtime.group === 'string' ? rec.runtime.group : 'default',
          blocks: null,
        };
        if (range) {
          deps.ranges.adopt(
            range.hostStart,
            { stateId: paths.stateId, stateDir: paths.stateDir, template: rec.id },
            { pid: rec.hostPid, startTime: h.startTime },
          );
          h.blocks = createTemplateBlocks(
            range,
            await makeUserNamespaces(blockIdmapSpecs(range, deps.uidRange)),
          );
          h.blocks.acquire(0);
        }
        h.ready = serve(h).connected;
        handles.set(rec.id, h);
      }
    },

    async destroy(id: string): Promise<void> {
      await destroy(id);
      store.deleteTemplate(id);
    },

    list(): TemplateHandle[] {
      return [...handles.values()];
    },

    /**
     * Stop the templates no sandbox has used for `idleMs`, so their uid ranges go back to the host: a
     * tenant's, and the host tenant's beyond the first of each config (which stays warm for the next
     * create). A template's blocks count its live sandboxes, forks, snapshot holders and kept parents.
     */
    async reapIdle(now = Date.now()): Promise<string[]> {
      const reaped: string[] = [];
      const keptFor = new Set<string>();
      for (const h of [...handles.values()]) {
        const key = store.getTemplate(h.id)?.configKey ?? h.id;
        if (!h.blocks || h.blocks.used() > 0) {
          idleSince.delete(h.id);
          if (h.group === HOST_GROUP) keptFor.add(key);
          continue;
        }
        const since = idleSince.get(h.id) ?? now;
        idleSince.set(h.id, since);
        const hostFirst = h.group === HOST_GROUP && !keptFor.has(key);
        if (hostFirst) keptFor.add(key);
        if (hostFirst || now - since < (deps.idleMs ?? TEMPLATE_IDLE_MS)) continue;
        idleSince.delete(h.id);
        await destroy(h.id).catch((e: unknown) =>
          log.warn({ template: h.id, err: String(e) }, 'could not stop an idle template'),
        );
        store.deleteTemplate(h.id);
        reaped.push(h.id);
        log.info({ template: h.id, group: h.group }, 'template stopped: no sandbox used it');
      }
      return reaped;
    },
  };
}
