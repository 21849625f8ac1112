/**
 * Starting one template container: its overlay root and inbox, its OCI config, `runc run --detach`, and
 * the wait for its agent's first connection — which ends at once, with the container log's tail, when the
 * container's PID 1 dies instead of connecting.
 */

import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import type { ImageRecord, TemplateRecord } from '../../../domain/types.ts';
import type { Store } from '../../../service/ports.ts';
import type { AgentConnection } from '../agent-link/agent-connection.ts';
import type { Mounts } from '../host/mounts.ts';
import type { NativePaths } from '../host/paths.ts';
import { isRunning, procStartTime } from '../host/proc.ts';
import { traverseAdvice, untraversable } from '../host/traverse.ts';
import type { UidRange } from '../host/uid-range.ts';
import type { AgentStart } from './agent-runtime.ts';
import { templateOciSpec } from './oci-spec.ts';

import { logTail, runProcess } from './runc.ts';

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
}

export interface StartDeps {
  paths: NativePaths;
  mounts: Mounts;
  store: Store;
  uidRange: UidRange;
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

/** Refuse before runc does, with the fix, when the sandboxes' root cannot reach the state dir. */
function checkReachable(paths: NativePaths, uid: number): void {
  const b = untraversable(paths.stateDir, uid, uid);
  if (b)
    throw new ForkboxError('requirement_missing', traverseAdvice(b, paths.stateDir, uid), { dir: b.dir });
}

export const newTemplateId = () => `tpl-${randomBytes(5).toString('hex')}`;

/** Start template `id` (a new id: newTemplateId). On failure the caller destroys what was made. */
export async function startTemplate(
  deps: StartDeps,
  id: string,
  image: ImageRecord,
  launch: AgentStart,
  key: string,
  prewarm: string[],
): Promise<TemplateHandle> {
  const { paths, mounts, store } = deps;
  checkReachable(paths, deps.uidRange.hostStart);
  const dir = paths.template(id);
  const upper = join(dir, 'upper');
  for (const d of [paths.templateRootfs(id), upper, join(dir, 'work')]) {
    mkdirSync(d, { recursive: true, mode: 0o755 });
    chmodSync(d, 0o755);
  }
  for (const d of [dir, paths.templateBundle(id)]) chmodSync(d, 0o755);
  // The template root's owner is its upper dir's: container root (the shifted host uid).
  chownSync(upper, deps.uidRange.hostStart, deps.uidRange.hostStart);
  const cgroup = paths.templateCgroup(id);
  const rec: TemplateRecord = {
    id,
    image: image.name,
    configKey: key,
    state: 'starting',
    hostPid: null,
    createdAt: Date.now(),
    runtime: { prewarm, cgroup },
  };
  store.insertTemplate(rec);
  mounts.overlay(paths.templateRootfs(id), image.layers, upper, join(dir, 'work'));
  mounts.sharedSelfBind(paths.inbox(id));
  const spec = templateOciSpec({
    templateId: id,
    agentDir: deps.agent.dir,
    inboxDir: paths.inbox(id),
    ...launch,
    env: image.env,
    ...(image.config ? { execDefaults: { cwd: image.config.workingDir, user: image.config.user } } : {}),
    uidRange: deps.uidRange,
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
  };
  const { connected } = deps.serve(h);
  const pidFile = join(dir, 'pid');
  const logFile = join(dir, 'container.log');
  mkdirSync(paths.runcRoot, { recursive: true, mode: 0o700 });
  // --no-new-keyring: runc would give each container a session keyring named after it (`_ses.<id>`),
  // and every template runs as the same host uid, so each sandbox could read every template's name in
  // /proc/keys. The container keeps the daemon's own anonymous session keyring instead (composition.ts).
  const r = await runProcess(
    deps.runc,
    [
      '--root',
      paths.runcRoot,
      'run',
      '--detach',
      '--no-new-keyring',
      '--bundle',
      paths.templateBundle(id),
      '--pid-file',
      pidFile,
      id,
    ],
    logFile,
  );
  if (r.code !== 0) {
    throw new ForkboxError(
      'internal',
      `runc could not start template ${id} (exit ${r.code}): ${r.log}. Run 'forkbox doctor'.`,
      { template: id },
    );
  }
  h.hostPid = Number(readFileSync(pidFile, 'utf8').trim());
  h.startTime = procStartTime(h.hostPid) ?? 0;
  // The template's PID 1 is the ancestor of every sandbox forked from it: never the OOM killer's pick.
  deps.exemptFromOom(h.hostPid);
  h.ready = connected;
  await awaitAgent(h, connected, logFile, deps.startTimeoutMs ?? 15000);
  store.updateTemplate(id, {
    state: 'running',
    hostPid: h.hostPid,
    runtime: { startTime: h.startTime, agent: deps.agent.hash, prewarm, cgroup },
  });
  return h;
}
