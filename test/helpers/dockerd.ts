/**
 * A private Docker daemon for a test (Debian's docker.io): its own data root, exec root, pidfile, config
 * and socket under one directory, so it shares nothing with a system dockerd or another test. The data
 * root may instead be the cached one (takeCachedDataRoot), held by one test at a time, so that a later run
 * on the same machine finds its images and build cache. It writes
 * no iptables rules (`--iptables=false --ip-masq=false`: its DOCKER chains would collide with a system
 * dockerd's, and Docker sets the host's FORWARD policy to DROP) and uses a bridge of its own, made here
 * on a free private /24 and removed at stop (docker0 may be a system dockerd's). Published ports work
 * through docker-proxy (`-p 127.0.0.1:PORT:…`); containers have no way out (no masquerade), so builds
 * use `--network host`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

/** Where a test dockerd may keep its data root between runs (its images and build cache). */
export const DOCKERD_CACHE = '/var/cache/forkbox/test-dockerd';

/**
 * The cached data root, held by this process until `release` (a lock file with its pid; a lock whose
 * process is gone is taken over), or undefined when another live process holds it: two dockerds never
 * share a data root.
 */
export function takeCachedDataRoot(): { path: string; release: () => void } | undefined {
  mkdirSync(DOCKERD_CACHE, { recursive: true, mode: 0o700 });
  const lock = join(DOCKERD_CACHE, 'lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lock, `${process.pid}\n`, { flag: 'wx' });
      return { path: join(DOCKERD_CACHE, 'data'), release: () => rmSync(lock, { force: true }) };
    } catch {
      const holder = Number.parseInt(readFileSync(lock, 'utf8'), 10);
      if (Number.isInteger(holder) && holder > 0 && existsSync(`/proc/${holder}`)) return undefined;
      rmSync(lock, { force: true }); // its holder is gone
    }
  }
  return undefined;
}

export async function startDockerd(root: string, opts: { dataRoot?: string } = {}): Promise<PrivateDockerd> {
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const sock = join(root, 'docker.sock');
  const host = `unix://${sock}`;
  const config = join(root, 'daemon.json');
  writeFileSync(config, '{}\n');
  const logPath = join(root, 'dockerd.log');
  const bridge = await makeBridge();
  const args = [
    `--data-root=${opts.dataRoot ?? join(root, 'data')}`,
    `--exec-root=${join(root, 'exec')}`,
    `--pidfile=${join(root, 'dockerd.pid')}`,
    `--config-file=${config}`,
    `--host=${host}`,
    `--bridge=${bridge}`,
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
    const why = exited
      ? 'dockerd exited at start'
      : Date.now() > deadline
        ? 'dockerd did not answer within 60 s'
        : undefined;
    if (why) {
      child.kill('SIGKILL');
      await runCmd('ip', ['link', 'del', bridge]);
      throw new Error(`${why}:\n${log.slice(-4000)}`);
    }
    const r = await runCmd(DOCKER, ['-H', host, 'version', '--format', '{{.Server.Version}}'], {
      env,
      timeoutMs: 10_000,
    });
    if (r.code === 0) break;
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
      await runCmd('ip', ['link', 'del', bridge]);
    },
  };
}

/**
 * A bridge `fb<hex>` with 198.18.N.1/24 (RFC 2544's range for test networks, never a real LAN here: the
 * machine's tests keep off private ranges), N not used by any address of the host.
 */
async function makeBridge(): Promise<string> {
  const used = (await runCmd('ip', ['-4', '-o', 'addr'])).stdout;
  const octet = [...Array(50).keys()].map((i) => 200 + i).find((n) => !used.includes(`198.18.${n}.`));
  if (octet === undefined) throw new Error('no free 198.18.200-249.0/24 for the test bridge');
  const name = `fb${randomBytes(4).toString('hex')}`;
  for (const args of [
    ['link', 'add', name, 'type', 'bridge'],
    ['addr', 'add', `198.18.${octet}.1/24`, 'dev', name],
    ['link', 'set', name, 'up'],
  ]) {
    const r = await runCmd('ip', args);
    if (r.code !== 0) throw new Error(`ip ${args.join(' ')} failed: ${r.stderr}`);
  }
  return name;
}
