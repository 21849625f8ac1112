/**
 * Small process helpers for the image store. Always argv arrays, never shell strings.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { ForkboxError } from '../domain/errors.ts';

/** Debian package that provides each external tool we spawn, for "missing requirement" errors. */
const PACKAGE_OF: Record<string, string> = {
  getfattr: 'attr',
  setfattr: 'attr',
  debootstrap: 'debootstrap',
  tar: 'tar',
  cp: 'coreutils',
  mknod: 'coreutils',
  umount: 'mount',
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

/** Throw requirement_missing for the first of `tools` not found on PATH (checked before long operations). */
export function requireTools(tools: readonly string[]): void {
  const dirs = (process.env.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin').split(
    ':',
  );
  for (const tool of tools) {
    const found = dirs.some((d) => {
      try {
        accessSync(join(d || '.', tool), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
    if (!found) throw missingTool(tool);
  }
}
