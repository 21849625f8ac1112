/**
 * `forkbox serve`: the daemon. Owns the state dir (the engine takes its lock), serves the local API on
 * its Unix socket and, beside it, MCP + REST on one TCP listener (transports/http-listener.ts).
 */

import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { pino } from 'pino';
import { ForkboxError } from '../../domain/errors.ts';
import type { RuntimeName } from '../../domain/runtime-id.ts';
import type { DiskSpec } from '../../domain/sizes.ts';
import { DEFAULT_TOOLSET, selectTools } from '../../protocol/mcp/toolsets.ts';
import { createGroupApp } from '../../protocol/rest/group-app.ts';
import { createLocalApp } from '../../protocol/rest/local-app.ts';
import { DEFAULT_TENANT } from '../../service/engine.ts';
import { parseNetworkCap } from '../../service/sandboxes/network-cap.ts';
import { auditMaxBytes, createAuditFile } from '../../transports/audit-file.ts';
import { socketPathFor } from '../../transports/daemon-launcher.ts';
import { DEFAULT_GROUP_SOCKET, prepareGroupSocketDir, resolveGroup } from '../../transports/group-socket.ts';
import {
  checkListenSecurity,
  type Listener,
  type ListenerOptions,
  startListener,
} from '../../transports/http-listener.ts';
import { DEFAULT_LISTEN, parseListen } from '../../transports/http-server.ts';
import { serveRecord, writeServeRecord } from '../../transports/serve-record.ts';
import { serveUnix } from '../../transports/unix-server.ts';
import { VERSION } from '../../version.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { parseGrace, parseOutputBytes } from '../options/mcp-options.ts';
import { addOidcOptions, type OidcFlags, parseOidcOptions } from '../options/oidc-options.ts';
import { addServeOptions } from '../options/serve-options.ts';
import { parseDuration } from '../parse.ts';

/** How long SIGTERM waits for in-flight HTTP requests before dropping them. */
const DRAIN_MS = 30_000;

interface ServeFlags extends OidcFlags {
  runtime?: RuntimeName;
  listen?: string;
  tokenFile?: string;
  maxConcurrency?: string;
  allowHost?: string[];
  allowOrigin?: string[];
  toolset?: string[];
  conformanceFixtures?: boolean;
  mcpSessionIdle?: string;
  mcpSessionGrace?: string;
  mcpMaxSessions?: string;
  mcpMaxOutput?: string;
  diskDefault?: DiskSpec;
  diskMax?: DiskSpec;
  projectRoot?: string[];
  imageAllow?: string[];
  retention?: string;
  auditMaxSize?: string;
  networkMax?: string;
  networkAllow?: string;
  pool?: number;
  socketGroup?: string;
  socket?: string;
}

/** The /mcp options the flags ask for (protocol/mcp/http/session-policy.ts and http-sessions.ts). */
function mcpOptions(o: ServeFlags) {
  const out: NonNullable<ListenerOptions['mcp']> = {};
  if (o.conformanceFixtures) out.fixtures = true;
  if (o.mcpSessionIdle !== undefined) {
    out.sessionIdleMs = Math.round(parseDuration(o.mcpSessionIdle) * 1000);
  }
  if (o.mcpSessionGrace !== undefined)
    out.sessionGraceMs = parseGrace(o.mcpSessionGrace, '--mcp-session-grace');
  if (o.mcpMaxSessions !== undefined)
    out.maxSessionsPerTenant = positiveInt(o.mcpMaxSessions, '--mcp-max-sessions');
  if (o.mcpMaxOutput !== undefined) out.outputBytes = parseOutputBytes(o.mcpMaxOutput, '--mcp-max-output');
  return out;
}

function positiveInt(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 1_000_000) {
    throw new ForkboxError(
      'invalid_argument',
      `${flag} must be a whole number from 1 to 1000000, not '${v}'.`,
    );
  }
  return n;
}

/** The daemon's settings from its flags and environment, validated before it takes the state dir. */
function serveSettings(o: ServeFlags) {
  const explicitListen = o.listen ?? process.env.FORKBOX_LISTEN;
  const tokenFile = o.tokenFile ?? (process.env.FORKBOX_TOKEN_FILE || undefined);
  const oidc = parseOidcOptions(o);
  // Deny by default: without tokens a TCP listener — even on loopback — lets every local user act
  // as tenant 'default', unlike the root-only Unix socket. So it starts by itself only with tokens
  // (a token file or an OIDC issuer); an explicit --listen (or FORKBOX_LISTEN) opens it without them.
  const listenSpec = explicitListen ?? (tokenFile || oidc ? DEFAULT_LISTEN : 'off');
  const listen = listenSpec === 'off' ? undefined : parseListen(listenSpec);
  if (!listen && explicitListen === undefined) {
    process.stderr.write(
      `forkbox: no TCP listener (no --token-file or --oidc-issuer). Add --token-file FILE, or --listen ${DEFAULT_LISTEN} to serve MCP/REST on loopback without tokens.\n`,
    );
  }
  const maxConcurrency =
    o.maxConcurrency === undefined ? undefined : positiveInt(o.maxConcurrency, '--max-concurrency');
  const toolsets = o.toolset ?? [DEFAULT_TOOLSET];
  selectTools(toolsets); // fail fast on an unknown toolset
  if (o.conformanceFixtures && !listen) {
    throw new ForkboxError(
      'invalid_argument',
      '--conformance-fixtures serves them on the TCP listener: add --listen 127.0.0.1:PORT.',
    );
  }
  const auditMax = auditMaxBytes(o.auditMaxSize);
  const networkCap = parseNetworkCap(o.networkMax, o.networkAllow);
  return {
    explicitListen,
    tokenFile,
    oidc,
    listenSpec,
    listen,
    maxConcurrency,
    toolsets,
    auditMax,
    networkCap,
  };
}

export function register(program: Command, ctx: CliContext): void {
  addServeOptions(addOidcOptions(defineCommand(program, 'serve'))).action(async (o: ServeFlags) => {
    const { stateDir } = ctx.globals();
    // Logs go to stderr, never stdout (stdout may be a protocol channel for a parent process).
    const log = pino(
      { level: process.env.FORKBOX_LOG_LEVEL ?? 'info', base: { pid: process.pid } },
      pino.destination(2),
    );
    const settings = serveSettings(o);
    // Refuse an unauthenticated network listener before taking the state dir.
    if (settings.listen) checkListenSecurity(settings.listen.host, settings.tokenFile, settings.oidc);
    if (o.socket !== undefined && o.socketGroup === undefined) {
      throw new ForkboxError(
        'invalid_argument',
        '--socket is the path of the group socket: add --socket-group GROUP.',
      );
    }
    const group =
      o.socketGroup === undefined
        ? undefined
        : { gid: resolveGroup(o.socketGroup), path: resolve(o.socket ?? DEFAULT_GROUP_SOCKET) };
    mkdirSync(stateDir, { recursive: true, mode: 0o755 });
    if (group) prepareGroupSocketDir(group.path, group.gid, stateDir);
    // Loaded here, not at the top: the engine (SQLite, FFI, runtimes) is only needed by the daemon, and
    // every other command should start fast.
    const { openEngine, parseRetention, socketPeerReader } = await import('../../composition.ts');
    // One audit writer for every door: the socket (CLI, forkbox mcp), the TCP listener, egress proxies.
    const audit = createAuditFile(join(stateDir, 'audit.log'), {
      maxBytes: settings.auditMax,
      onError: (e) => log.warn({ err: e.message }, 'audit log write failed'),
    });
    const engine = await openEngine({
      stateDir,
      log,
      networkCap: settings.networkCap,
      audit,
      ...(o.diskDefault ? { diskDefault: o.diskDefault } : {}),
      ...(o.diskMax ? { diskMax: o.diskMax } : {}),
      ...(o.projectRoot ? { projectRoots: o.projectRoot.map((d) => resolve(d)) } : {}),
      ...(o.imageAllow ? { imageAllow: o.imageAllow } : {}),
      ...(o.retention === undefined ? {} : { retentionSeconds: parseRetention(o.retention) }),
      ...(o.pool === undefined ? {} : { poolSize: o.pool }),
      ...(o.runtime === undefined ? {} : { defaultRuntime: o.runtime }),
    });
    // Who serves this state dir (it holds the lock now), and whether an operator configured it
    // (transports/serve-record.ts): written before any door opens, so whoever reaches it can read it.
    const serveArgs = process.argv.slice(process.argv.indexOf('serve') + 1);
    writeServeRecord(stateDir, serveRecord(serveArgs, process.env, process.pid));
    let server: Awaited<ReturnType<typeof serveUnix>> | undefined;
    let groupServer: Awaited<ReturnType<typeof serveUnix>> | undefined;
    let listener: Listener | undefined;
    try {
      const hostApp = createLocalApp(engine.api, {
        version: VERSION,
        sessions: {
          scoped: (session) => engine.engine.scoped({ tenant: DEFAULT_TENANT, session }),
          attach: (session, o) => engine.engine.attachSession(session, o),
        },
        audit,
      });
      const peerOf = socketPeerReader();
      server = await serveUnix(hostApp, socketPathFor(stateDir), { peerOf });
      if (group) {
        const app = createGroupApp({
          scoped: (c) => engine.engine.scoped(c),
          attach: (session, o) => engine.engine.attachSession(session, o),
          hostApp,
          version: VERSION,
          audit,
        });
        groupServer = await serveUnix(app, group.path, { peerOf, gid: group.gid, mode: 0o660 });
      }
      if (settings.listen) {
        try {
          listener = await startListener({
            engine: engine.engine,
            version: VERSION,
            host: settings.listen.host,
            port: settings.listen.port,
            tokenFile: settings.tokenFile,
            oidc: settings.oidc,
            audit,
            maxConcurrency: settings.maxConcurrency,
            allowHosts: o.allowHost,
            allowOrigins: o.allowOrigin,
            toolsets: settings.toolsets,
            log,
            hostMetrics: engine.metrics,
            mcp: mcpOptions(o),
          });
          if (o.conformanceFixtures) {
            log.warn({}, 'serving the MCP conformance fixtures on /mcp (--conformance-fixtures)');
          }
        } catch (e) {
          // Daemons started on demand (one per state dir) all ask for the default port: when another
          // daemon holds it, this one keeps serving its socket. An address asked for explicitly must work.
          const busy = e instanceof ForkboxError && e.code === 'conflict';
          if (settings.explicitListen !== undefined || !busy) throw e;
          log.warn({ listen: settings.listenSpec }, `${(e as Error).message} Serving the Unix socket only.`);
        }
      }
    } catch (e) {
      await server?.close();
      await groupServer?.close();
      await audit.close();
      await engine.close();
      throw e;
    }
    const unix = server;
    const groupUnix = groupServer;
    log.info(
      { socket: unix.socketPath, groupSocket: groupUnix?.socketPath, stateDir, version: VERSION },
      'forkbox daemon listening',
    );

    const onHup = () => {
      try {
        listener?.reloadTokens();
        log.info({ tenants: listener?.tokens?.tenants().length ?? 0 }, 'token file reloaded');
      } catch (e) {
        log.error(
          { err: (e as Error).message },
          'token file reload failed; the previous tokens stay in force',
        );
      }
    };
    process.on('SIGHUP', onHup);

    const signal = await new Promise<NodeJS.Signals>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'));
      process.once('SIGINT', () => resolve('SIGINT'));
    });
    log.info(
      { signal, drainMs: DRAIN_MS },
      'shutting down: draining requests (send the signal again to exit at once)',
    );
    process.off('SIGHUP', onHup);
    const force = () => process.exit(1);
    process.once('SIGTERM', force);
    process.once('SIGINT', force);
    try {
      await Promise.all([listener?.close(DRAIN_MS), unix.close(), groupUnix?.close()]);
    } finally {
      await audit.close();
      await engine.close();
    }
    log.info('forkbox daemon stopped');
    log.flush();
  });
}
