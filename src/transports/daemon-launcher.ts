/**
 * Find the daemon that owns a state dir, or start one (docs/ARCHITECTURE.md, "Design decisions": one owner per state dir): the CLI and the stdio MCP
 * server are clients of `forkbox serve`; when none answers and the caller is root, start it in the
 * background and wait for it — unless an operator configured the daemon of that state dir (its record,
 * or a systemd unit: transports/serve-record.ts), which a plain one must not replace; otherwise say
 * exactly what to run.
 */
import { accessSync, closeSync, constants, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ForkboxError } from '../domain/errors.ts';
import type { Logger } from '../domain/logger.ts';
import { createDaemonClient, type DaemonClient } from './daemon-client.ts';
import { configuredElsewhere, ON_DEMAND_ENV } from './serve-record.ts';

export const SOCKET_NAME = 'forkbox.sock';
export const DAEMON_LOG_NAME = 'daemon.log';

export const socketPathFor = (stateDir: string): string => join(stateDir, SOCKET_NAME);

/** The group socket's default path (transports/group-socket.ts; kept here so clients need not load it). */
const GROUP_SOCKET = '/run/forkbox/forkbox.sock';

/**
 * The socket a local client uses: FORKBOX_SOCKET when set; else the state dir's socket for root (or
 * whoever can write it); else, for a user without root, the group socket of `forkbox serve
 * --socket-group` (docs/ARCHITECTURE.md, "Use without root").
 */
export function clientSocketPath(stateDir: string): string {
  const env = process.env.FORKBOX_SOCKET;
  if (env !== undefined && env !== '') return env;
  const own = socketPathFor(stateDir);
  if (process.getuid?.() === 0) return own;
  try {
    accessSync(own, constants.W_OK);
    return own;
  } catch {
    return GROUP_SOCKET;
  }
}

export interface ConnectOptions {
  stateDir: string;
  log: Pick<Logger, 'info' | 'debug' | 'warn'>;
  /** May this process start the daemon when none answers? (It also has to be root.) */
  allowStart: boolean;
  /** How long to wait for a started daemon; default 15 s. */
  startTimeoutMs?: number;
  /** The executable entry to run `serve` with; default bin/forkbox.js of this package. */
  entry?: string;
  /** This client's name for itself in the daemon's audit log: `cli`, `mcp-stdio`. */
  client?: string;
  /** The systemd unit whose presence (naming this state dir) forbids starting a daemon; default /etc/systemd/system/forkbox.service. */
  unitPath?: string;
}

/** bin/forkbox.js, from either src/transports/ (checkout) or dist/transports/ (built package). */
function defaultEntry(): string {
  return fileURLToPath(new URL('../../bin/forkbox.js', import.meta.url));
}

/** The last `n` lines of the daemon's log, for error messages. */
function logTail(path: string, n = 20): string {
  try {
    const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
    return lines.slice(-n).join('\n');
  } catch {
    return '(no daemon log)';
  }
}

function startCommand(stateDir: string): string {
  const isDefault = stateDir === '/var/lib/forkbox';
  return `sudo forkbox${isDefault ? '' : ` --state-dir ${JSON.stringify(stateDir)}`} serve`;
}

export async function connectOrStartDaemon(opts: ConnectOptions): Promise<DaemonClient> {
  const socketPath = clientSocketPath(opts.stateDir);
  const client = createDaemonClient({ socketPath, client: opts.client });
  if (await client.health()) return client;

  const isRoot = process.getuid?.() === 0;
  if (!isRoot) {
    // A user without root cannot run the daemon: an administrator runs it with a group socket.
    client.close();
    throw new ForkboxError(
      'unavailable',
      `no forkbox daemon answers on ${socketPath} for this user, and starting one needs root. Ask an administrator to run 'sudo forkbox service install --socket-group GROUP' (a systemd unit) or 'sudo forkbox serve --socket-group GROUP', and to add you to GROUP (then log in again); or set FORKBOX_SOCKET to the group socket's path.`,
      { socketPath, stateDir: opts.stateDir },
    );
  }
  const configured = configuredElsewhere(opts.stateDir, opts.unitPath);
  if (configured !== undefined) {
    client.close();
    throw new ForkboxError('unavailable', `no forkbox daemon answers on ${socketPath}: ${configured}`, {
      socketPath,
      stateDir: opts.stateDir,
    });
  }
  if (!opts.allowStart || socketPath !== socketPathFor(opts.stateDir)) {
    client.close();
    throw new ForkboxError(
      'unavailable',
      `no forkbox daemon answers on ${socketPath}. Start it with '${startCommand(opts.stateDir)}' and retry.`,
      { socketPath, stateDir: opts.stateDir },
    );
  }
  try {
    await startDaemon(opts, client);
    return client;
  } catch (e) {
    client.close();
    throw e;
  }
}

interface Exit {
  code: number | null;
  signal: string | null;
}

/** Start `forkbox serve` for the state dir in the background; `exited()` says if it has ended. */
async function spawnDaemon(opts: ConnectOptions, logPath: string): Promise<() => Exit | undefined> {
  mkdirSync(opts.stateDir, { recursive: true, mode: 0o755 });
  const entry = opts.entry ?? defaultEntry();
  if (!existsSync(entry)) {
    throw new ForkboxError(
      'internal',
      `cannot find the forkbox executable at ${entry} to start the daemon.`,
      {
        entry,
      },
    );
  }
  // Loaded here: only the CLI call that starts the daemon needs it.
  const { spawn } = await import('node:child_process');
  opts.log.info({ stateDir: opts.stateDir, log: logPath }, 'starting the forkbox daemon');
  // The daemon must outlive this process: its own session (detached), no stdin, output to a log file (a
  // pipe to us would die with us, and in stdio MCP mode our stdout is the protocol channel).
  const fd = openSync(logPath, 'a', 0o640);
  let exited: Exit | undefined;
  try {
    const child = spawn(process.execPath, [entry, '--state-dir', opts.stateDir, 'serve'], {
      detached: true,
      stdio: ['ignore', fd, fd],
      env: { ...process.env, [ON_DEMAND_ENV]: '1' },
    });
    child.once('exit', (code, signal) => {
      exited = { code, signal };
    });
    child.once('error', (e) => {
      exited = { code: null, signal: e.message };
    });
    child.unref();
  } finally {
    closeSync(fd);
  }
  return () => exited;
}

/** Start the daemon and wait until `client` reaches it; throws with the daemon log's tail if it does not. */
async function startDaemon(opts: ConnectOptions, client: DaemonClient): Promise<void> {
  const logPath = join(opts.stateDir, DAEMON_LOG_NAME);
  const exited = await spawnDaemon(opts, logPath);
  const timeoutMs = opts.startTimeoutMs ?? 15_000;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await client.health(500)) {
      // Said on stderr: the caller learns that this daemon is one it started, not the operator's.
      opts.log.info(
        { socketPath: client.target, log: logPath },
        `no forkbox daemon answered for ${opts.stateDir}: started one on demand (its log: ${logPath})`,
      );
      return;
    }
    if (exited()) {
      // Another process may have won the race to start the daemon: ours then exits on the lock.
      if (await client.health(500)) return;
      break;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const end = exited();
  const how = end ? `it exited (${end.code ?? end.signal})` : `it did not answer within ${timeoutMs} ms`;
  throw new ForkboxError(
    'unavailable',
    `started the forkbox daemon but ${how}. Last lines of ${logPath}:\n${logTail(logPath)}\nFix the cause, or run '${startCommand(opts.stateDir)}' in the foreground to see it.`,
    { socketPath: client.target, log: logPath },
  );
}
