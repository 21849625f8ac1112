/**
 * Making a gvisor sandbox's host side — its directories, its root, its bundle, its control socket — and
 * undoing all of it. A create then runs the bundle (`runsc run`), a fork restores a checkpoint on it
 * (`runsc restore`): both start from what `prepare` made, and `release` removes it whatever was reached.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../domain/logger.ts';
import type { Limits } from '../../domain/types.ts';
import type { InboxHub } from '../native/agent-link/inbox-hub.ts';
import type { Cgroups } from '../native/cgroups/index.ts';
import type { GvisorLink, GvisorSandbox } from './gvisor-link.ts';
import type { GvisorPaths } from './gvisor-paths.ts';
import type { GvisorRootfs } from './gvisor-rootfs.ts';
import { gvisorOciSpec } from './gvisor-spec.ts';
import type { Runsc } from './runsc.ts';

export interface PrepareInput {
  id: string;
  layers: string[];
  /** The image's python3 (the agent's interpreter). */
  python: string;
  env: Record<string, string>;
  /** A pulled image's config: the default working directory and user of commands. */
  execDefaults?: { cwd: string | null; user: string | null } | undefined;
  limits: Limits;
}

export interface GvisorMaker {
  prepare(input: PrepareInput): Promise<GvisorSandbox>;
  /** Stops the container (if any), unmounts its root, closes its socket, removes its directories. */
  release(sb: GvisorSandbox): Promise<void>;
  /** The same for a sandbox no live one holds (a crash's, or one a failed kill left), and its checkpoint. */
  removeLeftover(id: string): Promise<void>;
}

export interface GvisorMakerDeps {
  paths: GvisorPaths;
  runsc: Runsc;
  rootfs: GvisorRootfs;
  link: GvisorLink;
  hub: InboxHub;
  cgroups: Cgroups;
  /** The host cgroup every gvisor sandbox's sentry lives under (relative). */
  cgroupParent: string;
  /** The agent's code on the host (installed once per content hash). */
  agentDir(): string;
  log: Logger;
}

export function createGvisorMaker(deps: GvisorMakerDeps): GvisorMaker {
  const { paths } = deps;

  async function prepare(input: PrepareInput): Promise<GvisorSandbox> {
    const { id } = input;
    const sb: GvisorSandbox = {
      id,
      nonce: randomBytes(16).toString('hex'),
      conn: null,
      connected: Promise.resolve(),
      paused: false,
      layers: input.layers,
      cgroup: `${deps.cgroupParent}/${id}`,
      hostPid: 0,
      ended: false,
      holding: false,
    };
    for (const d of [paths.base, paths.sandbox(id), paths.bundle(id), paths.inbox(id)]) {
      mkdirSync(d, { recursive: true, mode: 0o700 });
      chmodSync(d, 0o700);
    }
    await deps.cgroups.create(sb.cgroup, {
      memoryBytes: input.limits.memoryBytes,
      pids: 0,
      cpus: input.limits.cpus,
    });
    await deps.rootfs.mount(paths.rootfs(id), input.layers);
    const spec = gvisorOciSpec({
      sandboxId: id,
      nonce: sb.nonce,
      rootfs: paths.rootfs(id),
      agentDir: deps.agentDir(),
      inboxDir: paths.inbox(id),
      agentArgs: [input.python, '-I', '/.forkbox/bin/agent.py'],
      env: input.env,
      execDefaults: input.execDefaults,
      limits: input.limits,
      cgroupsPath: `/${sb.cgroup}`,
      hostname: id.slice(0, 63),
    });
    writeFileSync(join(paths.bundle(id), 'config.json'), JSON.stringify(spec), { mode: 0o600 });
    await deps.link.serve(sb, paths.controlSocket(id));
    return sb;
  }

  async function release(sb: GvisorSandbox): Promise<void> {
    sb.ended = true;
    sb.conn?.close();
    sb.conn = null;
    await deps.runsc.delete(sb.id).catch((e: unknown) => {
      deps.log.warn({ sandbox: sb.id, err: String(e) }, 'runsc delete failed');
    });
    deps.hub.close(sb.id);
    deps.rootfs.unmount(paths.rootfs(sb.id));
    await deps.cgroups.destroy(sb.cgroup).catch(() => undefined);
    rmSync(paths.sandbox(sb.id), { recursive: true, force: true });
  }

  async function removeLeftover(id: string): Promise<void> {
    await deps.runsc.delete(id).catch(() => undefined);
    deps.rootfs.unmount(paths.rootfs(id));
    deps.hub.close(id);
    await deps.cgroups.destroy(`${deps.cgroupParent}/${id}`).catch(() => undefined);
    rmSync(paths.sandbox(id), { recursive: true, force: true });
    rmSync(paths.checkpoint(id), { recursive: true, force: true });
  }

  return { prepare, release, removeLeftover };
}
