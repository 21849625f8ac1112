/**
 * The Docker peer: what a "fork" costs with Docker — `docker commit` of a running container (files only:
 * Docker cannot carry process memory) plus `docker run` of the committed image, once per child — and a
 * plain `docker run --rm` (the CLI start-up benchmark's peer). Uses Debian's docker.io when it is installed: a private `dockerd` (its own data root and socket
 * under the bench temp dir, no bridge, no iptables) started for the measurement and stopped after it, so
 * the host's Docker setup is never touched. The image is the default forkbox image's layers, shifted back
 * from forkbox's subordinate uid range to container uids and `docker import`ed.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, openSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { c as tarCreate } from 'tar';
import { createMounts, mountsUnder } from '../../src/runtimes/native/host/mounts.ts';
import { createSys } from '../../src/runtimes/native/host/sys.ts';
import { which } from '../../src/util/subprocess.ts';
import { defaultImage, type Log, tmpDir } from './env.ts';
import { nowMs, sleep } from './stats.ts';

const IMAGE = 'forkbox-bench/debian:latest';
/** forkbox stores image layers shifted into the subordinate range (host uid = 100000 + container uid). */
const UID_SHIFT = 100000;

export interface DockerPeer {
  /** Start the "source": a container holding a Python process with state, and a file written in it. */
  startSource(code: string): Promise<void>;
  /** `docker commit` of the source, then `docker run -d` of `n` children at once; wall time in ms. */
  fork(n: number): Promise<{ wallMs: number; commitMs: number; children: string[]; image: string }>;
  /** Remove a fork's children and its committed image. */
  remove(fork: { children: string[]; image: string }): Promise<void>;
  /**
   * `docker run --rm --network none IMAGE ...args` as a whole `docker` client process (what a user types),
   * until it exits; wall time in ms. Fails when the command does not exit 0.
   */
  runOnce(args: string[]): Promise<number>;
  /** `docker pull REF` (a registry on 127.0.0.0/8, which Docker takes over plain HTTP); wall time in ms. */
  pull(ref: string): Promise<number>;
  /** `docker run --rm --network none IMAGE ...args`, like runOnce but of any image this dockerd holds. */
  runImage(image: string, args: string[]): Promise<number>;
  close(): Promise<void>;
}

/** Why the Docker peer cannot run here, or null. */
export function dockerPeerUnavailable(): string | null {
  if (which('dockerd') === null) return 'dockerd not found (Debian: apt-get install docker.io)';
  if (which('docker') === null) return 'the docker client not found (Debian: apt-get install docker.io)';
  return null;
}

/** `importDefault: false` skips importing the default image (a peer of pulled images only). */
export async function startDockerPeer(log: Log, opts: { importDefault?: boolean } = {}): Promise<DockerPeer> {
  const dir = tmpDir('docker');
  const sock = join(dir, 'docker.sock');
  const env = { ...process.env, DOCKER_HOST: `unix://${sock}` };
  const docker = (args: string[], opts: { input?: { pipe(to: NodeJS.WritableStream): unknown } } = {}) =>
    new Promise<string>((resolve, reject) => {
      // A bounded wait: a wedged docker call fails the peer instead of hanging the benchmark.
      const child = execFile(
        'docker',
        args,
        { env, maxBuffer: 1 << 20, timeout: 300_000 },
        (err, stdout, stderr) => {
          if (err) reject(new Error(`docker ${args.join(' ')}: ${stderr.trim() || err.message}`));
          else resolve(stdout.trim());
        },
      );
      if (opts.input && child.stdin) opts.input.pipe(child.stdin);
    });

  const logFd = openSync(join(dir, 'dockerd.log'), 'a');
  const daemon: ChildProcess = spawn(
    which('dockerd') ?? 'dockerd',
    [
      '--data-root',
      join(dir, 'root'),
      '--exec-root',
      join(dir, 'exec'),
      '--host',
      `unix://${sock}`,
      '--pidfile',
      join(dir, 'dockerd.pid'),
      // No network set-up on the host: children run with --network none, like forkbox sandboxes.
      '--bridge=none',
      '--iptables=false',
      '--ip-masq=false',
    ],
    { stdio: ['ignore', logFd, logFd] },
  );
  const stop = async () => {
    if (daemon.exitCode === null && daemon.signalCode === null) {
      daemon.kill('SIGTERM');
      for (let i = 0; i < 100 && daemon.exitCode === null && daemon.signalCode === null; i++)
        await sleep(100);
      if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill('SIGKILL');
    }
    const mounts = createMounts(createSys());
    for (const m of mountsUnder(dir)) mounts.detach(m);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    let up = false;
    for (let i = 0; i < 150 && !up; i++) {
      if (daemon.exitCode !== null) break;
      up =
        existsSync(sock) &&
        (await docker(['version', '--format', '{{.Server.Version}}']).catch(() => '')) !== '';
      if (!up) await sleep(200);
    }
    if (!up) throw new Error(`dockerd did not come up (see ${join(dir, 'dockerd.log')})`);
    log(`docker peer: dockerd ${await docker(['version', '--format', '{{.Server.Version}}'])} on ${sock}`);
    if (opts.importDefault !== false) {
      const layers = defaultImage().layers;
      if (layers.length !== 1) throw new Error(`the default image has ${layers.length} layers; expected 1`);
      const stream = tarCreate(
        {
          cwd: layers[0] as string,
          // Files, directories and links only: reading the layer's /dev/zero or /dev/random as a file never
          // ends, and Docker gives every container its own /dev anyway.
          filter: (_path, st) => !('isFile' in st) || st.isFile() || st.isDirectory() || st.isSymbolicLink(),
          // Back from the subordinate range to container ids (forkbox shifted them at import).
          onWriteEntry: (entry) => {
            const st = entry.stat as { uid: number; gid: number } | undefined;
            if (st) {
              st.uid = st.uid >= UID_SHIFT ? st.uid - UID_SHIFT : st.uid;
              st.gid = st.gid >= UID_SHIFT ? st.gid - UID_SHIFT : st.gid;
            }
          },
        },
        ['.'],
      );
      await docker(['import', '-', IMAGE], { input: stream });
    }
  } catch (e) {
    await stop();
    throw e;
  }

  const runImage = async (image: string, args: string[]): Promise<number> => {
    const t0 = nowMs();
    await docker(['run', '--rm', '--network', 'none', image, ...args]);
    return nowMs() - t0;
  };
  let source: string | null = null;
  let generation = 0;
  return {
    async startSource(code) {
      source = await docker(['run', '-d', '--network', 'none', IMAGE, 'python3', '-c', code]);
      await docker(['exec', source, 'sh', '-c', 'echo precious > /root/data.txt']);
    },
    async fork(n) {
      if (source === null) throw new Error('startSource first');
      const tag = `forkbox-bench/fork:${++generation}`;
      const t0 = nowMs();
      // commit pauses the source (its default), like forkbox's freeze of the source's work.
      await docker(['commit', source, tag]);
      const commitMs = nowMs() - t0;
      const children = await Promise.all(
        Array.from({ length: n }, () => docker(['run', '-d', '--network', 'none', tag, 'sleep', 'infinity'])),
      );
      const wallMs = nowMs() - t0;
      return { wallMs, commitMs, children, image: tag };
    },
    async remove(fork) {
      if (fork.children.length > 0) await docker(['rm', '-f', ...fork.children]).catch(() => '');
      await docker(['rmi', fork.image]).catch(() => '');
    },
    runOnce: (args) => runImage(IMAGE, args),
    async pull(ref) {
      const t0 = nowMs();
      await docker(['pull', '--quiet', ref]);
      return nowMs() - t0;
    },
    runImage,
    async close() {
      if (source !== null) await docker(['rm', '-f', source]).catch(() => '');
      await stop();
    },
  };
}
