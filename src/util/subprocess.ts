/**
 * Running host programs, the one place for it: argv arrays only, never shell strings; a missing program is
 * `requirement_missing` naming the Debian package that provides it. Also the PATH search (`which`).
 */
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { ForkboxError } from '../domain/errors.ts';

/** Debian package that provides each external tool we spawn, for "missing requirement" errors. */
const PACKAGE_OF: Record<string, string> = {
  debootstrap: 'debootstrap',
  tar: 'tar',
  cp: 'coreutils',
  losetup: 'mount',
  'mkfs.btrfs': 'btrfs-progs',
  btrfs: 'btrfs-progs',
  'mkfs.ext4': 'e2fsprogs',
  nft: 'nftables',
  setpriv: 'util-linux',
};

export function missingTool(cmd: string): ForkboxError {
  const pkg = PACKAGE_OF[cmd] ?? cmd;
  return new ForkboxError(
    'requirement_missing',
    `'${cmd}' is not installed: install the Debian package '${pkg}' (apt-get install ${pkg}), or run forkbox set-up.`,
    { tool: cmd, package: pkg },
  );
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
}

export interface RunOptions {
  /** Bytes for stdin, then closed. */
  input?: Buffer | string;
  /** Called with every complete output line (stdout and stderr both), as it arrives. */
  onLine?: (line: string) => void;
  /** Keep stdout in memory (default true); false when only onLine matters (debootstrap is chatty). */
  captureStdout?: boolean;
  signal?: AbortSignal;
}

/** Run a command; resolves with its exit status (never rejects on non-zero exit; ENOENT → requirement_missing). */
export function run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    // detached: own process group, so an abort can kill debootstrap's whole tree (dpkg, chroot, …).
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], detached: opts.signal !== undefined });
    const out: Buffer[] = [];
    let err = '';
    const partial = { stdout: '', stderr: '' };
    const feed = (which: 'stdout' | 'stderr', chunk: Buffer) => {
      if (!opts.onLine) return;
      const text = partial[which] + chunk.toString('utf8');
      const lines = text.split('\n');
      partial[which] = lines.pop() ?? '';
      for (const l of lines) opts.onLine(l);
    };
    child.stdout.on('data', (c: Buffer) => {
      if (opts.captureStdout !== false) out.push(c);
      feed('stdout', c);
    });
    child.stderr.on('data', (c: Buffer) => {
      // Keep only the tail of stderr for error messages: a long build must not grow memory without bound.
      err = (err + c.toString('utf8')).slice(-16384);
      feed('stderr', c);
    });
    const onAbort = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    if (opts.signal) {
      if (opts.signal.aborted) onAbort();
      else opts.signal.addEventListener('abort', onAbort, { once: true });
    }
    child.on('error', (e: NodeJS.ErrnoException) => {
      opts.signal?.removeEventListener('abort', onAbort);
      reject(e.code === 'ENOENT' ? missingTool(cmd) : e);
    });
    child.on('close', (code, signal) => {
      opts.signal?.removeEventListener('abort', onAbort);
      if (opts.onLine) {
        if (partial.stdout) opts.onLine(partial.stdout);
        if (partial.stderr) opts.onLine(partial.stderr);
      }
      resolve({ code, signal, stdout: Buffer.concat(out), stderr: err });
    });
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}

/** Run and throw an internal error carrying stderr when the command fails. */
export async function runOk(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const r = await run(cmd, args, opts);
  if (r.code !== 0) {
    throw new ForkboxError(
      'internal',
      `${cmd} failed (exit ${r.code ?? r.signal}): ${r.stderr.trim().slice(-2000)}`,
      {
        command: [cmd, ...args].slice(0, 8),
      },
    );
  }
  return r;
}

/**
 * Run a short command synchronously and return its stdout; a command that cannot start is
 * requirement_missing (with `advice`, or the package to install), a non-zero exit internal with its stderr.
 */
export function runSync(cmd: string, args: readonly string[], advice?: string): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error) {
    if (advice === undefined) throw missingTool(cmd);
    throw new ForkboxError('requirement_missing', `${cmd} could not run (${r.error.message}); ${advice}`);
  }
  if (r.status !== 0)
    throw new ForkboxError(
      'internal',
      `${cmd} ${args.join(' ')} failed (exit ${r.status}): ${r.stderr.trim()}`,
    );
  return r.stdout;
}

/** Where a root daemon's PATH may lack the sbin directories. */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The full path of an executable `bin` found on `path` (default: this process's PATH), then in the sbin
 * directories a root daemon's PATH may lack; null when none is found.
 */
export function which(bin: string, path: string = process.env.PATH ?? DEFAULT_PATH): string | null {
  for (const dir of path.split(':').concat(['/usr/sbin', '/sbin'])) {
    if (dir === '') continue;
    try {
      accessSync(join(dir, bin), constants.X_OK);
      return join(dir, bin);
    } catch {
      // next
    }
  }
  return null;
}

/** Throw requirement_missing for the first of `tools` not found (checked before long operations). */
export function requireTools(tools: readonly string[]): void {
  for (const tool of tools) if (which(tool) === null) throw missingTool(tool);
}
