/**
 * A private Docker daemon for a test (Debian's docker.io): its own data root, exec root, pidfile, config
 * and socket under one directory, so it shares nothing with a system dockerd or another test. It makes no
 * bridge and no iptables rules (`--bridge none --iptables=false`): a second daemon's bridge and its
 * DOCKER chains would collide with a system dockerd's, and Docker sets the host's FORWARD policy to DROP.
 * Containers use the host's network; the test keeps their listeners on loopback.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const DOCKERD = '/usr/sbin/dockerd';
/** Debian's client, not another docker on PATH: it matches the daemon's API version. */
export const DOCKER = '/usr/bin/docker';

export interface CmdResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run argv (never a shell line) with a deadline; output kept in full for stdout, the tail for stderr. */
export function runCmd(
  cmd: string,
  args: readonly string[],
  opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number; cwd?: string; onStderr?: (s: string) => void } = {},
): Promise<CmdResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: opts.env ?? process.env,
      cwd: opts.cwd,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-64 * 1024);
      opts.onStderr?.(d.toString());
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Why a private dockerd cannot run here, or null. */
export function dockerdMissing(): string | null {
  if (process.getuid?.() !== 0) return 'needs root (dockerd)';
  for (const bin of [DOCKERD, DOCKER]) {
    if (!existsSync(bin)) return `${bin} is missing: install Debian's docker.io (scripts/setup.sh does)`;
  }
  return null;
}

export interface PrivateDockerd {
  root: string;
  /** `unix://…` of its socket, for DOCKER_HOST. */
  host: string;
  /** The environment for docker clients (and scripts) that should reach it. */
  env: NodeJS.ProcessEnv;
  /** `docker ARGS` against it; fails with the output unless it exits 0 (or `allowFail`). */
  docker(args: readonly string[], opts?: { timeoutMs?: number; allowFail?: boolean }): Promise<CmdResult>;
  log(): string;
  stop(): Promise<void>;
}

export async function startDockerd(root: string): Promise<PrivateDockerd> {
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const sock = join(root, 'docker.sock');
  const host = `unix://${sock}`;
  const config = join(root, 'daemon.json');
  writeFileSync(config, '{}\n');
  const logPath = join(root, 'dockerd.log');
  const args = [
    `--data-root=${join(root, 'data')}`,
    `--exec-root=${join(root, 'exec')}`,
    `--pidfile=${join(root, 'dockerd.pid')}`,
    `--config-file=${config}`,
    `--host=${host}`,
    '--bridge=none',
    '--iptables=false',
    '--ip-masq=false',
    '--storage-driver=overlay2',
  ];
  const child: ChildProcess = spawn(DOCKERD, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr?.on('data', (d: Buffer) => {
    log = (log + d.toString()).slice(-256 * 1024);
  });
  let exited = false;
  child.on('exit', () => {
    exited = true;
  });
  const env = { ...process.env, DOCKER_HOST: host, DOCKER: DOCKER };
  const docker: PrivateDockerd['docker'] = async (dargs, opts = {}) => {
    const r = await runCmd(DOCKER, ['-H', host, ...dargs], { env, timeoutMs: opts.timeoutMs ?? 120_000 });
    if (r.code !== 0 && !opts.allowFail) {
      throw new Error(`docker ${dargs.join(' ')} exited ${r.code}:\n${r.stderr}\n${r.stdout.slice(-4000)}`);
    }
    return r;
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`dockerd exited at start:\n${log.slice(-4000)}`);
    const r = await runCmd(DOCKER, ['-H', host, 'version', '--format', '{{.Server.Version}}'], {
      env,
      timeoutMs: 10_000,
    });
    if (r.code === 0) break;
    if (Date.now() > deadline) throw new Error(`dockerd did not answer within 60 s:\n${log.slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    root,
    host,
    env,
    docker,
    log: () => log,
    async stop() {
      if (exited) return;
      const gone = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      await gone;
      clearTimeout(timer);
      writeFileSync(logPath, log);
    },
  };
}
