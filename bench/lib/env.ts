/**
 * What the benchmarks run against: a `forkbox serve` daemon on its own temp state dir (reached through
 * the daemon client, like the CLI and MCP server do) and an in-process engine on a second temp state dir
 * (one owner per state dir). Both reuse the default image's read-only layers from the main state dir.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { type OpenedEngine, openEngine } from '../../src/composition.ts';
import type { ImageRecord } from '../../src/domain/types.ts';
import { mountsUnder } from '../../src/runtimes/native/host/mounts.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { createDaemonClient, type DaemonClient } from '../../src/transports/daemon-client.ts';
import { socketPathFor } from '../../src/transports/daemon-launcher.ts';

export const MAIN_STATE_DIR = process.env.FORKBOX_STATE_DIR ?? '/var/lib/forkbox';
const REPO = resolve(import.meta.dirname, '..', '..');
const TMP_ROOT = '/var/tmp/forkbox-bench';

export type Log = (msg: string) => void;

/** Progress goes to stderr: stdout carries only the results table (or JSON). */
export const stderrLog: Log = (msg) => process.stderr.write(`[bench] ${msg}\n`);

export interface Surface {
  name: 'daemon' | 'in-process';
  api: ForkboxApi;
  stateDir: string;
}

export function defaultImage(): ImageRecord {
  const p = join(MAIN_STATE_DIR, 'images', 'debian.json');
  try {
    return JSON.parse(readFileSync(p, 'utf8')) as ImageRecord;
  } catch {
    throw new Error(`the default image is not built (${p} missing): run 'sudo npm run setup' first`);
  }
}

export function tmpDir(prefix: string): string {
  mkdirSync(TMP_ROOT, { recursive: true });
  return mkdtempSync(join(TMP_ROOT, `${prefix}-`));
}

/** A fresh state dir whose image catalog holds the default image (sharing its layers). */
export function makeStateDir(prefix: string): string {
  const dir = tmpDir(prefix);
  mkdirSync(join(dir, 'images'), { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, 'images', 'debian.json'), JSON.stringify(defaultImage()));
  // The browser image too, when it is built (bench/browser.ts needs it).
  const browser = join(MAIN_STATE_DIR, 'images', 'debian-browser.json');
  if (existsSync(browser)) writeFileSync(join(dir, 'images', 'debian-browser.json'), readFileSync(browser));
  return dir;
}

/** Silent engine logger; warnings and errors still reach stderr. */
function engineLog(tag: string) {
  const out = (level: string) => (o: object | string, m?: string) =>
    process.stderr.write(`[${tag} ${level}] ${typeof o === 'string' ? o : JSON.stringify(o)} ${m ?? ''}\n`);
  return { debug: () => undefined, info: () => undefined, warn: out('warn'), error: out('error') };
}

export interface DaemonHandle {
  surface: Surface;
  client: DaemonClient;
  logPath: string;
  /** The daemon process (for its RSS and fd count). */
  pid: number;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((res) => {
    const t = setTimeout(() => res(false), ms);
    child.once('exit', () => {
      clearTimeout(t);
      res(true);
    });
  });
}

/** Start `forkbox serve` on a new state dir and connect a long-lived client to it. */
export async function startDaemon(log: Log, serveArgs: string[] = []): Promise<DaemonHandle> {
  const stateDir = makeStateDir('daemon');
  const logPath = join(stateDir, 'daemon.log');
  const fd = openSync(logPath, 'a');
  const child = spawn(
    process.execPath,
    [join(REPO, 'bin', 'forkbox.js'), '--state-dir', stateDir, 'serve', ...serveArgs],
    {
      stdio: ['ignore', 'ignore', fd],
      // FORKBOX_LOG_LEVEL=debug would add per-step logs; info keeps the daemon's own overhead realistic.
      env: { ...process.env },
    },
  );
  closeSync(fd);
  const client = createDaemonClient({ socketPath: socketPathFor(stateDir) });
  const t0 = Date.now();
  while (!(await client.health(500))) {
    if (child.exitCode !== null) throw new Error(`forkbox serve exited (${child.exitCode}); see ${logPath}`);
    if (Date.now() - t0 > 30000) {
      child.kill('SIGKILL');
      throw new Error(`forkbox serve did not answer within 30 s; see ${logPath}`);
    }
    await sleep(50);
  }
  log(`daemon pid ${child.pid} serving ${stateDir} (started in ${Date.now() - t0} ms)`);
  return {
    surface: { name: 'daemon', api: client, stateDir },
    client,
    logPath,
    pid: child.pid ?? 0,
    async stop() {
      client.close();
      child.kill('SIGTERM');
      if (!(await waitExit(child, 10000))) {
        child.kill('SIGKILL');
        await waitExit(child, 5000);
      }
      // Sandboxes and templates outlive the daemon by design: open the engine on its dir to end them.
      await cleanupStateDir(stateDir, log);
    },
  };
}

export interface InProcessHandle {
  surface: Surface;
  opened: OpenedEngine;
  stop(): Promise<void>;
}

export async function openInProcess(log: Log, opts: { poolSize?: number } = {}): Promise<InProcessHandle> {
  const stateDir = makeStateDir('inproc');
  const opened = await openEngine({ stateDir, log: engineLog('engine'), reapIntervalMs: 0, ...opts });
  log(`in-process engine on ${stateDir}`);
  return {
    surface: { name: 'in-process', api: opened.api, stateDir },
    opened,
    async stop() {
      await opened.close({ killSandboxes: true });
      removeStateDir(stateDir, log);
    },
  };
}

/** Kill every sandbox and template a (stopped) daemon left in its state dir, then remove the dir. */
export async function cleanupStateDir(stateDir: string, log: Log): Promise<void> {
  const opened = await openEngine({
    stateDir,
    log: engineLog('cleanup'),
    reapIntervalMs: 0,
    recoverDeadlineMs: 3000,
  });
  await opened.close({ killSandboxes: true });
  removeStateDir(stateDir, log);
}

function removeStateDir(stateDir: string, log: Log): void {
  const left = mountsUnder(stateDir);
  if (left.length > 0) {
    log(`WARNING: mounts left under ${stateDir}, not removing it: ${left.join(', ')}`);
    return;
  }
  rmSync(stateDir, { recursive: true, force: true });
}
