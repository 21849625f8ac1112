/**
 * runsc (gVisor) as the gvisor runtime calls it: argv arrays only, one `--root` per state dir, the flags
 * every call must agree on (a container made with one set must be checkpointed and restored with the
 * same), and the detached calls (`run -detach`, `restore -detach`) given no pipe of ours to hold open.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { ForkboxError } from '../../domain/errors.ts';
import { run } from '../../util/subprocess.ts';

/** The flags of every runsc call (docs/SECURITY.md, "The gvisor runtime"). */
export function runscFlags(root: string): string[] {
  return [
    `--root=${root}`,
    // No KVM here: systrap, gVisor's default platform, needs none.
    '--platform=systrap',
    // The sandbox's own network stack with loopback only: nothing reaches the host's network.
    '--network=none',
    // The agent connects to its inbox's control socket on the host; nothing else of the host is reachable.
    '--host-uds=open',
    // The root's writes stay in the sentry's memory: saved with a checkpoint, carried by every restore,
    // and never written to the image's layers on the host.
    '--overlay2=root:memory',
  ];
}

export interface Runsc {
  readonly bin: string;
  /** Starts a container from `bundle` (detached); resolves when its PID 1 runs. */
  run(id: string, bundle: string, logFile: string): Promise<void>;
  /** Writes a checkpoint of a running container to `imageDir`; the container keeps running. */
  checkpoint(id: string, imageDir: string): Promise<void>;
  /** Starts a new container `id` from a checkpoint (detached), on `bundle`'s mounts. */
  restore(id: string, bundle: string, imageDir: string, logFile: string): Promise<void>;
  pause(id: string): Promise<void>;
  resume(id: string): Promise<void>;
  /** Sends `signal` (a name such as KILL or USR2) to the container's PID 1 (`all`: to every process). */
  kill(id: string, signal: string, opts?: { all?: boolean }): Promise<void>;
  /** Removes a container, running or not; a container runsc does not know is not an error. */
  delete(id: string): Promise<void>;
  /** Container state (`running`, `paused`, `stopped`, …) and its sandbox's host pid; null when unknown. */
  state(id: string): Promise<{ status: string; pid: number } | null>;
  /** The ids of every container under this root. */
  list(): Promise<string[]>;
}

const CALL_TIMEOUT_MS = 60_000;

export interface RunscOptions {
  bin: string;
  root: string;
  /** Checkpoint images: `none` (default: fastest on a local disk) or `flate-best-speed` (smaller). */
  compression?: 'none' | 'flate-best-speed';
}

export function createRunsc(opts: RunscOptions): Runsc {
  const flags = runscFlags(opts.root);

  async function call(args: string[], what: string): Promise<string> {
    const ac = new AbortController();
    const t = setTimeout(() => ac.abort(), CALL_TIMEOUT_MS);
    try {
      const r = await run(opts.bin, [...flags, ...args], { signal: ac.signal });
      if (r.code !== 0)
        throw new ForkboxError(
          'internal',
          `runsc ${what} failed (exit ${r.code ?? r.signal}): ${r.stderr.trim().slice(-1500)}`,
        );
      return r.stdout.toString();
    } finally {
      clearTimeout(t);
    }
  }

  /** A detached start: stdin and stdout are /dev/null, stderr the container's log (no pipe of ours). */
  function detached(args: string[], logFile: string, what: string): Promise<void> {
    const fd = openSync(logFile, 'a', 0o600);
    return new Promise<void>((resolve, reject) => {
      const child = spawn(opts.bin, [...flags, ...args], { stdio: ['ignore', 'ignore', fd] });
      const t = setTimeout(() => child.kill('SIGKILL'), CALL_TIMEOUT_MS);
      child.on('error', (e) => {
        clearTimeout(t);
        reject(new ForkboxError('requirement_missing', `cannot run ${opts.bin}: ${e.message}`));
      });
      child.on('exit', (code, signal) => {
        clearTimeout(t);
        if (code === 0) resolve();
        else
          reject(
            new ForkboxError(
              'internal',
              `runsc ${what} failed (exit ${code ?? signal}); its log is ${logFile}`,
            ),
          );
      });
    }).finally(() => closeSync(fd));
  }

  return {
    bin: opts.bin,
    run: (id, bundle, logFile) => detached(['run', '-detach', '-bundle', bundle, id], logFile, 'run'),
    async checkpoint(id, imageDir) {
      const compression = `--compression=${opts.compression ?? 'none'}`;
      await call(['checkpoint', '--leave-running', compression, '--image-path', imageDir, id], 'checkpoint');
    },
    restore: (id, bundle, imageDir, logFile) =>
      detached(['restore', '-detach', '--image-path', imageDir, '-bundle', bundle, id], logFile, 'restore'),
    async pause(id) {
      await call(['pause', id], 'pause');
    },
    async resume(id) {
      await call(['resume', id], 'resume');
    },
    async kill(id, signal, o) {
      await call(['kill', ...(o?.all ? ['--all'] : []), id, signal], 'kill');
    },
    async delete(id) {
      const r = await run(opts.bin, [...flags, 'delete', '-force', id]);
      if (r.code !== 0 && !/does not exist|not found|no such/i.test(r.stderr))
        throw new ForkboxError('internal', `runsc delete ${id} failed: ${r.stderr.trim().slice(-1500)}`);
    },
    async state(id) {
      const r = await run(opts.bin, [...flags, 'state', id]);
      if (r.code !== 0) return null;
      try {
        const s = JSON.parse(r.stdout.toString()) as { status?: unknown; pid?: unknown };
        return { status: String(s.status ?? 'unknown'), pid: typeof s.pid === 'number' ? s.pid : 0 };
      } catch {
        return null;
      }
    },
    async list() {
      const out = await call(['list', '-quiet'], 'list');
      return out.split('\n').filter((l) => l.trim() !== '');
    },
  };
}
