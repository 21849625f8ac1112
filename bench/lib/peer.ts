/**
 * The peer every forkbox figure is compared with: a cold `runc run` of the same image — the default
 * image's layers overlay-mounted as the rootfs with a fresh upper dir, the OCI config of forkbox's own
 * templates (templateOciSpec: user namespace, the same namespaces, capabilities and seccomp profile)
 * minus the agent's bind mounts, and the command to run as process.args. runc gets a private --root.
 */
import { spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { templateOciSpec } from '../../src/runtimes/native/container/oci-spec.ts';
import { createMounts, mountsUnder } from '../../src/runtimes/native/host/mounts.ts';
import { createSys } from '../../src/runtimes/native/host/sys.ts';
import { defaultImage, type Log, tmpDir } from './env.ts';
import { nowMs } from './stats.ts';

const UID_RANGE = { hostStart: 100000, size: 65536 };
const CGROUP_PARENT = 'forkbox-bench-peer';
const CGROUP_ROOT = '/sys/fs/cgroup';

export interface PeerRun {
  /** Overlay mount + `runc run` until the container's process exited and runc returned. */
  totalMs: number;
  stdout: string;
  code: number | null;
}

export interface Peer {
  readonly runc: string;
  run(args: string[]): Promise<PeerRun>;
  close(): void;
}

function runProcess(
  cmd: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({ code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }),
    );
  });
}

export function createPeer(log: Log): Peer {
  const runc = process.env.FORKBOX_RUNC ?? 'runc';
  const image = defaultImage();
  const dir = tmpDir('peer');
  // The mapped container root (host uid 100000) must traverse down to the bundle, as in forkbox's state dir.
  chmodSync(dir, 0o711);
  const runcRoot = join(dir, 'runc');
  mkdirSync(runcRoot, { mode: 0o700 });
  const mounts = createMounts(createSys());
  let seq = 0;

  function specFor(id: string, args: string[]): Record<string, unknown> {
    const spec = templateOciSpec({
      templateId: id,
      agentDir: '/nonexistent',
      inboxDir: '/nonexistent',
      agentArgs: [],
      runtimeDir: null,
      env: image.env,
      uidRange: UID_RANGE,
      cgroupsPath: `/${CGROUP_PARENT}/${id}`,
      prewarm: [],
    }) as {
      process: { args: string[]; env: string[] };
      mounts: { destination: string }[];
      hostname: string;
    };
    spec.process.args = args;
    spec.process.env = spec.process.env.filter((e) => !e.startsWith('FORKBOX_'));
    // The agent's code and inbox are forkbox-specific; a plain container has neither.
    spec.mounts = spec.mounts.filter((m) => !m.destination.startsWith('/.forkbox'));
    spec.hostname = 'peer';
    return spec as unknown as Record<string, unknown>;
  }

  return {
    runc,
    async run(args) {
      const id = `peer-${process.pid}-${seq++}`;
      const bundle = join(dir, id);
      const rootfs = join(bundle, 'rootfs');
      const upper = join(bundle, 'upper');
      const work = join(bundle, 'work');
      for (const d of [rootfs, upper, work]) mkdirSync(d, { recursive: true, mode: 0o755 });
      chownSync(upper, UID_RANGE.hostStart, UID_RANGE.hostStart);
      writeFileSync(join(bundle, 'config.json'), JSON.stringify(specFor(id, args)));
      const t0 = nowMs();
      let r: Awaited<ReturnType<typeof runProcess>>;
      try {
        mounts.overlay(rootfs, image.layers, upper, work);
        r = await runProcess(runc, ['--root', runcRoot, 'run', '--bundle', bundle, id]);
      } finally {
        mounts.detach(rootfs);
      }
      const totalMs = nowMs() - t0;
      rmSync(bundle, { recursive: true, force: true });
      if (r.code !== 0) throw new Error(`runc run ${args.join(' ')} exited ${r.code}: ${r.stderr.trim()}`);
      return { totalMs, stdout: r.stdout, code: r.code };
    },
    close() {
      for (const m of mountsUnder(dir)) mounts.detach(m);
      rmSync(dir, { recursive: true, force: true });
      // runc removes each container's cgroup when it exits; the shared parent is ours to remove.
      if (existsSync(CGROUP_ROOT)) {
        for (const ctl of readdirSync(CGROUP_ROOT)) {
          const p = join(CGROUP_ROOT, ctl, CGROUP_PARENT);
          try {
            if (existsSync(p)) rmdirSync(p);
          } catch (e) {
            log(`could not remove ${p}: ${String(e)}`);
          }
        }
      }
    },
  };
}
