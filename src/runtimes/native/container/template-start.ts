/**
 * Starting one template container: a host uid range of its own (host/uid-ranges.ts) and a user namespace
 * owned by that range's first uid (so the kernel charges its per-user counters to no one else), its
 * idmapped overlay root and inbox, its OCI config (runc joins that namespace), `runc run --detach`, and the
 * wait for its agent's first connection — which ends at once, with the container log's tail, when the
 * container's PID 1 dies instead of connecting.
 */

import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, closeSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import type { ImageRecord } from '../../../domain/types.ts';
import type { Store } from '../../../service/ports.ts';
import type { AgentConnection } from '../agent-link/agent-connection.ts';
import type { Mounts } from '../host/mounts.ts';
import type { NativePaths } from '../host/paths.ts';
import { isRunning, procStartTime } from '../host/proc.ts';
import { traverseAdvice, untraversable } from '../host/traverse.ts';
import type { UidRange } from '../host/uid-range.ts';
import { BLOCK_SIZE, BLOCKS_PER_RANGE, type UidRanges } from '../host/uid-ranges.ts';
import { makeUserNamespaces, storageIdmap, type UsernsSpec } from '../host/userns-maker.ts';
import type { AgentStart } from './agent-runtime.ts';
import { templateOciSpec } from './oci-spec.ts';
import { logTail, runProcess } from './runc.ts';
import { createTemplateBlocks, type TemplateBlocks } from './template-blocks.ts';

export interface TemplateHandle {
  id: string;
  image: string;
  hostPid: number;
  startTime: number;
  /** Its cgroup, relative to each controller's root. */
  cgroup: string;
  conn: AgentConnection | null;
  /** Resolves once an agent connection is up (again). */
  ready: Promise<void>;
  /** Whose sandboxes it makes (a tenant): never another's (docs/SECURITY.md). */
  group: string;
  /** Its host uid range and blocks; null for a template started before ranges (host uid 100000, shared). */
  blocks: TemplateBlocks | null;
}

/** Idmaps of every block of `range`: layers stored with container ids seen as that block's ids. */
export function blockIdmapSpecs(range: UidRange, storage: UidRange): UsernsSpec[] {
  return Array.from({ length: BLOCKS_PER_RANGE }, (_, i) => ({
    map: storageIdmap(storage.hostStart, range.hostStart + i * BLOCK_SIZE, BLOCK_SIZE),
  }));
}

export interface StartDeps {
  paths: NativePaths;
  mounts: Mounts;
  store: Store;
  /** The ids layers are stored with (container id N = host id hostStart + N). */
  uidRange: UidRange;
  ranges: UidRanges;
  runc: string;
  startTimeoutMs?: number;
  agent: { dir: string; hash: string };
  /** Listen for the template's agent; resolves on its first verified connection. */
  serve(h: TemplateHandle): { connected: Promise<void> };
  exemptFromOom(pid: number): void;
}

/** Wait for the agent's connection; fail at once if the container's PID 1 dies first. */
function awaitAgent(h: TemplateHandle, connected: Promise<void>, logFile: string, ms: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const started = Date.now();
    const poll = setInterval(() => {
      if (!isRunning(h.hostPid, h.startTime)) {
        done();
        const log = logTail(logFile);
        reject(
          new ForkboxError(
            'requirement_missing',
            `template ${h.id}'s agent exited before it connected to the host${log ? `; the end of its log (${logFile}):\n${log}` : ` (its log ${logFile} is empty)`}\nCheck the image's python3 with 'forkbox doctor'.`,
            { template: h.id, log },
          ),
        );
      } else if (Date.now() - started >= ms) {
        done();
        reject(
          new ForkboxError(
            'timeout',
            `template ${h.id}'s agent did not connect within ${ms} ms (it is still running). Check 'forkbox doctor' and ${logFile}.`,
            { template: h.id },
          ),
        );
      }
    }, 50);
    const done = () => clearInterval(poll);
    void connected.then(() => {
      done();
      resolve();
    });
  });
}

/** Refuse before runc does, with the fix, when the template's root cannot reach the state dir. */
function checkReachable(paths: NativePaths, uid: number): void {
  const b = untraversable(paths.stateDir, uid, uid);
  if (b)
    throw new ForkboxError('requirement_missing', traverseAdvice(b, paths.stateDir, uid), { dir: b.dir });
}

export const newTemplateId = () => `tpl-${randomBytes(5).toString('hex')}`;

/**
 * The template's directory: root:<its root's gid> 0750, so runc (as the template's root) walks to the
 * root filesystem in it while no other host user enters; its upper is stored as container root.
 */
function makeTemplateDirs(paths: NativePaths, id: string, rootId: number, storage: UidRange): void {
  const dir = paths.template(id);
  for (const d of [paths.templateRootfs(id), join(dir, 'upper'), join(dir, 'work')]) {
    mkdirSync(d, { recursive: true, mode: 0o755 });
    chmodSync(d, 0o755);
  }
  chmodSync(paths.templateBundle(id), 0o755);
  chownSync(dir, 0, rootId);
  chmodSync(dir, 0o750);
  chownSync(join(dir, 'upper'), storage.hostStart, storage.hostStart);
}

/** Start template `id` (a new id: newTemplateId). On failure the caller destroys what was made. */
export async function startTemplate(
  deps: StartDeps,
  id: string,
  image: ImageRecord,
  launch: AgentStart,
  key: string,
  opts: { prewarm: string[]; group: string },
): Promise<TemplateHandle> {
  const { paths, mounts, store } = deps;
  const { prewarm, group } = opts;
  const range = deps.ranges.reserve({ stateId: paths.stateId, stateDir: paths.stateDir, template: id });
  let holderFd = -1;
  let blocks: TemplateBlocks | null = null;
  try {
    checkReachable(paths, range.hostStart);
    // Its user namespace, owned by the range's first uid, and every block's idmap, in one helper run.
    const [holder, ...idmaps] = await makeUserNamespaces([
      { owner: range.hostStart, map: `0 ${range.hostStart} ${range.size}\n` },
      ...blockIdmapSpecs(range, deps.uidRange),
    ]);
    holderFd = holder as number;
    blocks = createTemplateBlocks(range, idmaps);
    const own = blocks.acquire(0);
    if (!own) throw new ForkboxError('internal', 'a template range without its own block');
    makeTemplateDirs(paths, id, range.hostStart, deps.uidRange);
    const dir = paths.template(id);
    const cgroup = paths.templateCgroup(id);
    const runtime = { prewarm, cgroup, group, range };
    store.insertTemplate({
      id,
      image: image.name,
      configKey: key,
      state: 'starting',
      hostPid: null,
      createdAt: Date.now(),
      runtime,
    });
    mounts.overlay(
      paths.templateRootfs(id),
      image.layers.map((path) => ({ path, idmap: own.storageNs })),
      { root: dir, upper: 'upper', work: 'work', idmap: own.storageNs },
    );
    mounts.sharedSelfBind(paths.inbox(id));
    const spec = templateOciSpec({
      templateId: id,
      agentDir: deps.agent.dir,
      inboxDir: paths.inbox(id),
      ...launch,
      env: image.env,
      ...(image.config ? { execDefaults: { cwd: image.config.workingDir, user: image.config.user } } : {}),
      uidRange: range,
      // runc joins the namespace made above (through this process's descriptor) instead of making one.
      userns: `/proc/${process.pid}/fd/${holderFd}`,
      cgroupsPath: cgroup,
      prewarm,
    });
    writeFileSync(join(paths.templateBundle(id), 'config.json'), JSON.stringify(spec, null, 2), {
      mode: 0o600,
    });
    const h: TemplateHandle = {
      id,
      image: image.name,
      hostPid: 0,
      startTime: 0,
      cgroup: cgroup.replace(/^\//, ''),
      conn: null,
      ready: Promise.resolve(),
      group,
      blocks,
    };
    const { connected } = deps.serve(h);
    await runTemplate(deps, h, dir);
    closeSync(holderFd); // its processes keep the namespace now
    holderFd = -1;
    deps.ranges.hold(range.hostStart, { pid: h.hostPid, startTime: h.startTime });
    h.ready = connected;
    await awaitAgent(h, connected, join(dir, 'container.log'), deps.startTimeoutMs ?? 15000);
    store.updateTemplate(id, {
      state: 'running',
      hostPid: h.hostPid,
      runtime: { ...runtime, startTime: h.startTime, agent: deps.agent.hash },
    });
    return h;
  } catch (e) {
    if (holderFd >= 0) closeSync(holderFd);
    blocks?.close();
    deps.ranges.release(range.hostStart);
    throw e;
  }
}

/** `runc run --detach`; sets the handle's PID 1 and exempts it from the OOM killer. */
async function runTemplate(deps: StartDeps, h: TemplateHandle, dir: string): Promise<void> {
  const { paths } = deps;
  const pidFile = join(dir, 'pid');
  const logFile = join(dir, 'container.log');
  mkdirSync(paths.runcRoot, { recursive: true, mode: 0o700 });
  // --no-new-keyring: runc would give each container a session keyring named after it (`_ses.<id>`),
  // readable in /proc/keys by whatever shares its keyring owner. The container keeps the daemon's own
  // anonymous session keyring instead (composition.ts).
  const r = await runProcess(
    deps.runc,
    [
      '--root',
      paths.runcRoot,
      'run',
      '--detach',
      '--no-new-keyring',
      '--bundle',
      paths.templateBundle(h.id),
      '--pid-file',
      pidFile,
      h.id,
    ],
    logFile,
  );
  if (r.code !== 0) {
    throw new ForkboxError(
      'internal',
      `runc could not start template ${h.id} (exit ${r.code}): ${r.log}. Run 'forkbox doctor'.`,
      { template: h.id },
    );
  }
  h.hostPid = Number(readFileSync(pidFile, 'utf8').trim());
  h.startTime = procStartTime(h.hostPid) ?? 0;
  // The template's PID 1 is the ancestor of every sandbox forked from it: never the OOM killer's pick.
  deps.exemptFromOom(h.hostPid);
}
