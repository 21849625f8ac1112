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

/** What the templates of one runtime hold between calls. */
interface TemplatesState {
  deps: TemplateDeps;
  handles: Map<string, TemplateHandle>;
  /** Starts under way, by config key: one start per key at a time. */
  starting: Map<string, Promise<TemplateHandle>>;
  /** When each template with a uid range was last seen without a sandbox. */
  idleSince: Map<string, number>;
  /** The agent's files, installed at the first template. */
  agent: { dir: string; hash: string } | undefined;
}

/**
 * The runtime-wide modules, then the config's, each once: the order the worker imports them in. None
 * for an image without python3: its worker only forks, it never runs user code.
 */
function effectivePrewarm(s: TemplatesState, image: ImageRecord, prewarm: readonly string[]): string[] {
  return image.python ? [...new Set([...s.deps.prewarm, ...prewarm])] : [];
}

function configKey(s: TemplatesState, image: ImageRecord, prewarm: string[], group: string): string {
  const { deps } = s;
  s.agent ??= installAgent(deps.paths);
  // The security profile is part of the key: a template started under an older seccomp profile (or
  // keyring set-up) is not reused for new sandboxes. So is the agent's runtime when the image has no
  // python3: a rebuilt default image gets new templates. And the tenant: a template serves one only.
  const key = {
    image: image.id,
    ...(image.python ? {} : { runtime: deps.runtimeImage?.()?.id ?? null }),
    agent: s.agent.hash,
    uid: { storage: deps.uidRange, ranges: 'v1' },
    prewarm,
    seccomp: SECCOMP_KEY,
    keyring: 'none',
    group,
  };
  return createHash('sha256').update(JSON.stringify(key)).digest('hex').slice(0, 24);
}

/** Listen on the template's control socket; each (re)connection becomes the template's connection. */
function serve(deps: TemplateDeps, h: TemplateHandle): { connected: Promise<void> } {
  const { paths, hub, log } = deps;
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

/** Stops template `id` and gives back what it holds on the host (its record stays). */
async function destroy(s: TemplatesState, id: string): Promise<void> {
  const { paths, mounts, hub, store } = s.deps;
  const h = s.handles.get(id);
  s.handles.delete(id);
  h?.conn?.close();
  hub.close(id);
  h?.blocks?.close();
  const range = rangeOf(store.getTemplate(id)) ?? h?.blocks?.range;
  await runProcess(
    s.deps.runc,
    ['--root', paths.runcRoot, 'delete', '--force', id],
    join(paths.template(id), 'container.log'),
  ).catch(() => undefined);
  mounts.detachAllUnder(paths.inbox(id));
  mounts.detachAllUnder(paths.template(id));
  rmSync(paths.inbox(id), { recursive: true, force: true });
  rmSync(paths.template(id), { recursive: true, force: true });
  if (range) s.deps.ranges.release(range.hostStart);
}

async function start(
  s: TemplatesState,
  image: ImageRecord,
  key: string,
  prewarm: string[],
  group: string,
): Promise<TemplateHandle> {
  const { deps } = s;
  const launch = agentStart(image, deps.runtimeImage?.());
  s.agent ??= installAgent(deps.paths);
  const startDeps = {
    ...deps,
    agent: s.agent,
    exemptFromOom: deps.exemptFromOom ?? (() => undefined),
    serve: (h: TemplateHandle) => serve(deps, h),
  };
  const id = newTemplateId();
  try {
    const h = await startTemplate(startDeps, id, image, launch, key, { prewarm, group });
    s.handles.set(h.id, h);
    deps.log.info({ template: h.id, image: image.name, pid: h.hostPid }, 'template started');
    return h;
  } catch (e) {
    await destroy(s, id).catch(() => undefined);
    if (deps.store.getTemplate(id)) deps.store.updateTemplate(id, { state: 'failed' });
    throw e;
  }
}

/**
 * A running template of (image, key) with a block free (`needBlock`), reconnected if need be; a dead one
 * is removed.
 */
async function running(
  s: TemplatesState,
  image: ImageRecord,
  key: string,
  needBlock: boolean,
): Promise<TemplateHandle | null> {
  const { store, log } = s.deps;
  for (const h of [...s.handles.values()]) {
    if (h.image !== image.name || store.getTemplate(h.id)?.configKey !== key) continue;
    if (needBlock && h.blocks && h.blocks.used() >= h.blocks.range.size / BLOCK_SIZE - 1) continue;
    if (!isRunning(h.hostPid, h.startTime)) {
      log.warn({ template: h.id }, 'template process is gone; starting a new one');
      await destroy(s, h.id).catch(() => undefined);
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

/**
 * A running template for this image whose worker pre-imported `prewarm` (started on first use).
 * A module that fails to import does not fail the template: the worker logs it and carries on.
 */
async function ensure(
  s: TemplatesState,
  image: ImageRecord,
  prewarm: readonly string[],
  group: string,
): Promise<TemplateHandle> {
  const modules = effectivePrewarm(s, image, prewarm);
  const key = configKey(s, image, modules, group);
  const h = await running(s, image, key, true);
  if (h) return h;
  let p = s.starting.get(key);
  if (!p) {
    p = start(s, image, key, modules, group).finally(() => s.starting.delete(key));
    s.starting.set(key, p);
  }
  return p;
}

/**
 * The running template of (image, prewarm), without starting one; null when there is none or when
 * it is also the image's default template (its config adds nothing to the runtime-wide modules).
 */
function findDedicated(s: TemplatesState, image: ImageRecord, prewarm: readonly string[]): TemplateHandle[] {
  const out: TemplateHandle[] = [];
  for (const h of s.handles.values()) {
    const key = configKey(s, image, effectivePrewarm(s, image, prewarm), h.group);
    if (key === configKey(s, image, effectivePrewarm(s, image, []), h.group)) continue;
    if (s.deps.store.getTemplate(h.id)?.configKey === key) out.push(h);
  }
  return out;
}

/** After a restart: the template of `rec` listened for again, or removed when its process is gone. */
async function adoptOne(s: TemplatesState, rec: TemplateRecord): Promise<void> {
  const { deps } = s;
  const { paths, store, log } = deps;
  const startTime = typeof rec.runtime.startTime === 'number' ? rec.runtime.startTime : undefined;
  if (rec.state !== 'running' || rec.hostPid === null || !isRunning(rec.hostPid, startTime)) {
    if (rec.state === 'running') log.warn({ template: rec.id }, 'template process is gone; removing it');
    await destroy(s, rec.id).catch(() => undefined);
    store.deleteTemplate(rec.id);
    return;
  }
  const cgroup = typeof rec.runtime.cgroup === 'string' ? rec.runtime.cgroup : `/forkbox/templates/${rec.id}`;
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
    h.blocks = createTemplateBlocks(range, await makeUserNamespaces(blockIdmapSpecs(range, deps.uidRange)));
    h.blocks.acquire(0);
  }
  h.ready = serve(deps, h).connected;
  s.handles.set(rec.id, h);
}

/**
 * Stop the templates no sandbox has used for `idleMs`, so their uid ranges go back to the host: a
 * tenant's, and the host tenant's beyond the first of each config (which stays warm for the next
 * create). A template's blocks count its live sandboxes, forks, snapshot holders and kept parents.
 */
async function reapIdle(s: TemplatesState, now: number): Promise<string[]> {
  const { store, log } = s.deps;
  const reaped: string[] = [];
  const keptFor = new Set<string>();
  for (const h of [...s.handles.values()]) {
    const key = store.getTemplate(h.id)?.configKey ?? h.id;
    if (!h.blocks || h.blocks.used() > 0) {
      s.idleSince.delete(h.id);
      if (h.group === HOST_GROUP) keptFor.add(key);
      continue;
    }
    const since = s.idleSince.get(h.id) ?? now;
    s.idleSince.set(h.id, since);
    const hostFirst = h.group === HOST_GROUP && !keptFor.has(key);
    if (hostFirst) keptFor.add(key);
    if (hostFirst || now - since < (s.deps.idleMs ?? TEMPLATE_IDLE_MS)) continue;
    s.idleSince.delete(h.id);
    await destroy(s, h.id).catch((e: unknown) =>
      log.warn({ template: h.id, err: String(e) }, 'could not stop an idle template'),
    );
    store.deleteTemplate(h.id);
    reaped.push(h.id);
    log.info({ template: h.id, group: h.group }, 'template stopped: no sandbox used it');
  }
  return reaped;
}

export function createTemplates(deps: TemplateDeps): Templates {
  const s: TemplatesState = {
    deps,
    handles: new Map(),
    starting: new Map(),
    idleSince: new Map(),
    agent: undefined,
  };
  return {
    ensure: (image, prewarm, group) => ensure(s, image, prewarm, group),
    get: (id) => s.handles.get(id),
    findDedicated: (image, prewarm) => findDedicated(s, image, prewarm),
    async adopt(records) {
      for (const rec of records) await adoptOne(s, rec);
    },
    async destroy(id) {
      await destroy(s, id);
      deps.store.deleteTemplate(id);
    },
    list: () => [...s.handles.values()],
    reapIdle: (now = Date.now()) => reapIdle(s, now),
  };
}
