/**
 * Templates: one long-lived runc container per (image, template config) whose PID 1 is the agent with
 * a warm REPL worker. Every sandbox is forked from a template's worker (DESIGN.md 2.1).
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  chownSync,
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ForkboxError } from '../../../domain/errors.ts';
import type { Logger } from '../../../domain/logger.ts';
import type { ImageRecord, TemplateRecord } from '../../../domain/types.ts';
import type { Store } from '../../../service/ports.ts';
import { type AgentConnection, createAgentConnection } from '../agent-link/agent-connection.ts';
import type { InboxHub } from '../agent-link/inbox-hub.ts';
import { deadline } from '../host/deadline.ts';
import type { Mounts } from '../host/mounts.ts';
import type { NativePaths } from '../host/paths.ts';
import { isAlive, procStartTime, setOomScoreAdj } from '../host/proc.ts';
import { templateOciSpec, type UidRange } from './oci-spec.ts';
import { seccompProfile } from './seccomp.ts';

const SECCOMP_KEY = createHash('sha256').update(JSON.stringify(seccompProfile())).digest('hex').slice(0, 12);

export interface TemplateHandle {
  id: string;
  image: string;
  hostPid: number;
  startTime: number;
  conn: AgentConnection | null;
  /** Resolves once an agent connection is up (again). */
  ready: Promise<void>;
}

export interface TemplateDeps {
  paths: NativePaths;
  mounts: Mounts;
  hub: InboxHub;
  store: Store;
  log: Logger;
  uidRange: UidRange;
  runc: string;
  /** Modules every template pre-imports, before those of its own config (runtime-wide). */
  prewarm: string[];
  startTimeoutMs?: number;
}

/** The agent's code ships in src/agent; it is copied into the state dir under a content hash. */
function agentSourceDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const cand of [join(here, '../../../agent'), join(here, '../../../../src/agent')]) {
    if (existsSync(join(cand, 'agent.py'))) return cand;
  }
  throw new ForkboxError(
    'requirement_missing',
    `forkbox's agent code (agent.py) is missing next to ${here}; reinstall forkbox.`,
  );
}

export function installAgent(paths: NativePaths): { dir: string; hash: string } {
  const src = agentSourceDir();
  const files = readdirSync(src)
    .filter((f) => f.endsWith('.py'))
    .sort();
  const h = createHash('sha256');
  for (const f of files)
    h.update(f)
      .update('\0')
      .update(readFileSync(join(src, f)))
      .update('\0');
  const hash = h.digest('hex').slice(0, 16);
  const dir = paths.agentDir(hash);
  if (!existsSync(join(dir, 'agent.py'))) {
    const tmp = `${dir}.tmp-${randomBytes(4).toString('hex')}`;
    mkdirSync(tmp, { recursive: true, mode: 0o755 });
    for (const f of files) copyFileSync(join(src, f), join(tmp, f));
    try {
      renameSync(tmp, dir);
    } catch {
      rmSync(tmp, { recursive: true, force: true }); // another process installed it first
    }
  }
  return { dir, hash };
}

function runProcess(cmd: string, args: string[], logFile: string): Promise<{ code: number; log: string }> {
  return new Promise((resolve, reject) => {
    const fd = openSync(logFile, 'a');
    // stdin /dev/null and output to a log file, never the daemon's stdio: in stdio MCP mode that is
    // the protocol stream, and after a daemon restart it would be a dead pipe. detached: the
    // container must outlive the daemon.
    const p = spawn(cmd, args, { stdio: ['ignore', fd, fd], detached: true });
    closeSync(fd);
    p.on('error', reject);
    p.on('exit', (code) => {
      let log = '';
      try {
        log = readFileSync(logFile, 'utf8').slice(-2000);
      } catch {
        // no log
      }
      resolve({ code: code ?? 1, log });
    });
  });
}

export function createTemplates(deps: TemplateDeps) {
  const { paths, mounts, hub, store, log } = deps;
  const handles = new Map<string, TemplateHandle>();
  const starting = new Map<string, Promise<TemplateHandle>>();
  let agent: { dir: string; hash: string } | undefined;

  /** The runtime-wide modules, then the config's, each once: the order the worker imports them in. */
  function effectivePrewarm(prewarm: readonly string[]): string[] {
    return [...new Set([...deps.prewarm, ...prewarm])];
  }

  function configKey(image: ImageRecord, prewarm: string[]): string {
    agent ??= installAgent(paths);
    return (
      createHash('sha256')
        // The security profile is part of the key: a template started under an older seccomp profile is
        // not reused for new sandboxes.
        .update(
          JSON.stringify({
            image: image.id,
            agent: agent.hash,
            uid: deps.uidRange,
            prewarm,
            seccomp: SECCOMP_KEY,
          }),
        )
        .digest('hex')
        .slice(0, 24)
    );
  }

  /** Listen on the template's control socket; each (re)connection becomes the template's connection. */
  function serve(h: TemplateHandle): { connected: Promise<void> } {
    let first: (() => void) | undefined;
    const connected = new Promise<void>((r) => {
      first = r;
    });
    void hub.listen(h.id, paths.controlSocket(h.id), {
      verify(hello, cred) {
        if (hello.sandboxId !== h.id || hello.role !== 'template')
          throw new Error(`hello names ${hello.role} ${hello.sandboxId}`);
        if (cred.pid !== h.hostPid)
          throw new Error(`peer pid ${cred.pid} is not the template's PID 1 (${h.hostPid})`);
      },
      onAgent({ socket, hello }) {
        h.conn?.close();
        const conn = createAgentConnection(socket, hello, { log });
        h.conn = conn;
        conn.on('close', () => {
          if (h.conn === conn) h.conn = null;
        });
        first?.();
      },
    });
    return { connected };
  }

  async function start(image: ImageRecord, key: string, prewarm: string[]): Promise<TemplateHandle> {
    if (!image.python) {
      throw new ForkboxError(
        'requirement_missing',
        `image '${image.name}' has no python3, which the native runtime's agent needs. Build an image with python3 ('forkbox images build debian').`,
      );
    }
    agent ??= installAgent(paths);
    const id = `tpl-${randomBytes(5).toString('hex')}`;
    const dir = paths.template(id);
    const rootfs = paths.templateRootfs(id);
    const upper = join(dir, 'upper');
    const work = join(dir, 'work');
    for (const d of [rootfs, upper, work]) mkdirSync(d, { recursive: true, mode: 0o755 });
    // The template root's owner is its upper dir's: container root (the shifted host uid).
    chownSync(upper, deps.uidRange.hostStart, deps.uidRange.hostStart);
    const inbox = paths.inbox(id);
    const now = Date.now();
    const rec: TemplateRecord = {
      id,
      image: image.name,
      configKey: key,
      state: 'starting',
      hostPid: null,
      createdAt: now,
      runtime: { prewarm },
    };
    store.insertTemplate(rec);
    try {
      mounts.overlay(rootfs, image.layers, upper, work);
      mounts.sharedSelfBind(inbox);
      const spec = templateOciSpec({
        templateId: id,
        agentDir: agent.dir,
        inboxDir: inbox,
        python: image.python,
        env: image.env,
        uidRange: deps.uidRange,
        cgroupsPath: paths.templateCgroup(id),
        prewarm,
      });
      writeFileSync(join(paths.templateBundle(id), 'config.json'), JSON.stringify(spec, null, 2));
      const h: TemplateHandle = {
        id,
        image: image.name,
        hostPid: 0,
        startTime: 0,
        conn: null,
        ready: Promise.resolve(),
      };
      const { connected } = serve(h);
      const pidFile = join(dir, 'pid');
      mkdirSync(paths.runcRoot, { recursive: true, mode: 0o700 });
      const r = await runProcess(
        deps.runc,
        [
          '--root',
          paths.runcRoot,
          'run',
          '--detach',
          '--bundle',
          paths.templateBundle(id),
          '--pid-file',
          pidFile,
          id,
        ],
        join(dir, 'container.log'),
      );
      if (r.code !== 0) {
        throw new ForkboxError(
          'internal',
          `runc could not start template ${id} (exit ${r.code}): ${r.log.trim()}. Run 'forkbox doctor'.`,
        );
      }
      h.hostPid = Number(readFileSync(pidFile, 'utf8').trim());
      h.startTime = procStartTime(h.hostPid) ?? 0;
      // The template's PID 1 is the ancestor of every sandbox forked from it: the OOM killer must pick
      // user code, never it.
      setOomScoreAdj(h.hostPid, -1000);
      h.ready = connected;
      await deadline<void>(deps.startTimeoutMs ?? 15000, `template ${id}'s agent connecting`, (resolve) => {
        void connected.then(resolve);
      });
      store.updateTemplate(id, {
        state: 'running',
        hostPid: h.hostPid,
        runtime: { startTime: h.startTime, agent: agent.hash, prewarm },
      });
      handles.set(id, h);
      log.info({ template: id, image: image.name, pid: h.hostPid }, 'template started');
      return h;
    } catch (e) {
      await destroy(id).catch(() => undefined);
      store.updateTemplate(id, { state: 'failed' });
      throw e;
    }
  }

  async function destroy(id: string): Promise<void> {
    const h = handles.get(id);
    handles.delete(id);
    h?.conn?.close();
    hub.close(id);
    await runProcess(
      deps.runc,
      ['--root', paths.runcRoot, 'delete', '--force', id],
      join(paths.template(id), 'container.log'),
    ).catch(() => undefined);
    mounts.detachAllUnder(paths.inbox(id));
    mounts.detachAllUnder(paths.template(id));
    rmSync(paths.inbox(id), { recursive: true, force: true });
    rmSync(paths.template(id), { recursive: true, force: true });
  }

  return {
    /**
     * A running template for this image whose worker pre-imported `prewarm` (started on first use).
     * A module that fails to import does not fail the template: the worker logs it and carries on.
     */
    async ensure(image: ImageRecord, prewarm: readonly string[] = []): Promise<TemplateHandle> {
      const modules = effectivePrewarm(prewarm);
      const key = configKey(image, modules);
      for (const h of handles.values()) {
        if (
          h.image === image.name &&
          store.getTemplate(h.id)?.configKey === key &&
          isAlive(h.hostPid, h.startTime)
        ) {
          if (!h.conn)
            await deadline<void>(
              5000,
              `template ${h.id}'s agent reconnecting`,
              (resolve) => void h.ready.then(resolve),
            );
          return h;
        }
      }
      let p = starting.get(key);
      if (!p) {
        p = start(image, key, modules).finally(() => starting.delete(key));
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
    findDedicated(image: ImageRecord, prewarm: readonly string[]): TemplateHandle | null {
      const key = configKey(image, effectivePrewarm(prewarm));
      if (key === configKey(image, effectivePrewarm([]))) return null;
      for (const h of handles.values()) if (store.getTemplate(h.id)?.configKey === key) return h;
      return null;
    },

    /** After a daemon restart: re-listen for running templates' agents; stop records whose process is gone. */
    async adopt(records: TemplateRecord[]): Promise<void> {
      for (const rec of records) {
        if (rec.state !== 'running' || rec.hostPid === null) {
          await destroy(rec.id).catch(() => undefined);
          store.deleteTemplate(rec.id);
          continue;
        }
        const startTime = typeof rec.runtime.startTime === 'number' ? rec.runtime.startTime : undefined;
        if (!isAlive(rec.hostPid, startTime)) {
          log.warn({ template: rec.id }, 'template process is gone; removing it');
          await destroy(rec.id).catch(() => undefined);
          store.deleteTemplate(rec.id);
          continue;
        }
        const h: TemplateHandle = {
          id: rec.id,
          image: rec.image,
          hostPid: rec.hostPid,
          startTime: startTime ?? 0,
          conn: null,
          ready: Promise.resolve(),
        };
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
  };
}

export type Templates = ReturnType<typeof createTemplates>;
