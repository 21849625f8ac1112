/**
 * `forkbox serve`: the daemon. Owns the state dir (the engine takes its lock), serves the local API on
 * its Unix socket and, beside it, MCP + REST on one TCP listener (transports/http-listener.ts).
 */

import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { pino } from 'pino';
import { ForkboxError } from '../../domain/errors.ts';
import { type DiskSpec, parseDiskSpec } from '../../domain/sizes.ts';
import { DEFAULT_MAX_CONCURRENCY } from '../../protocol/http/limits.ts';
import { DEFAULT_TOOLSET, selectTools, TOOLSETS } from '../../protocol/mcp/toolsets.ts';
import { createGroupApp } from '../../protocol/rest/group-app.ts';
import { createLocalApp } from '../../protocol/rest/local-app.ts';
import { DEFAULT_TENANT } from '../../service/engine.ts';
import { parseNetworkCap } from '../../service/network-cap.ts';
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
import { serveUnix } from '../../transports/unix-server.ts';
import { VERSION } from '../../version.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { parseGrace, parseOutputBytes } from '../mcp-options.ts';
import { addOidcOptions, type OidcFlags, parseOidcOptions } from '../oidc-options.ts';
import { parseDuration, parsePoolSize } from '../parse.ts';

/** How long SIGTERM waits for in-flight HTTP requests before dropping them. */
const DRAIN_MS = 30_000;

const collect = (v: string, prev: string[] = []) => [...prev, ...v.split(',').filter((s) => s !== '')];

interface ServeFlags extends OidcFlags {
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

/** The /mcp options the flags ask for (protocol/mcp/session-policy.ts and http-sessions.ts). */
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
  addOidcOptions(defineCommand(program, 'serve'))
    .option(
      '--listen <host:port>',
      `TCP listener address, or 'off' (env FORKBOX_LISTEN; default ${DEFAULT_LISTEN} when --token-file or --oidc-issuer is given, else off). Non-loopback addresses need one of them`,
    )
    .option(
      '--token-file <file>',
      "bearer tokens, one 'TOKEN TENANT [NS1,NS2]' per line; NS: the namespaces a token is limited to (env FORKBOX_TOKEN_FILE)",
    )
    .option('--max-concurrency <n>', `requests in flight per tenant (default ${DEFAULT_MAX_CONCURRENCY})`)
    .option('--allow-host <name>', 'extra Host name accepted on the listener, repeatable', collect)
    .option(
      '--allow-origin <origin>',
      'extra browser Origin accepted (e.g. https://app.example), repeatable',
      collect,
    )
    .option(
      '--toolset <name>',
      `MCP toolset of /mcp, repeatable: ${Object.keys(TOOLSETS).join(', ')} (default: ${DEFAULT_TOOLSET}); /mcp/<name> serves each alone`,
      collect,
    )
    .option(
      '--mcp-session-idle <duration>',
      'close an MCP HTTP session after this long without a request (default 10m)',
    )
    .option(
      '--mcp-session-grace <duration>',
      "how long an MCP session's sandboxes outlive it unless it was ended with DELETE, or 0 (default 10m)",
    )
    .option('--mcp-max-sessions <n>', 'live MCP HTTP sessions per tenant (default 32)')
    .option('--mcp-max-output <size>', 'MCP: inline output per stream when a call does not say (default 32k)')
    .option(
      '--disk-default <size[,inodes]>',
      'disk limit of sandboxes created without one, e.g. 10g,1m (env FORKBOX_DISK_DEFAULT; default 10g,1m)',
      parseDiskSpec,
    )
    .option(
      '--project-root <dir...>',
      'allow sandbox projects (create --project) in directories under DIR (repeatable; default: none allowed)',
    )
    .option(
      '--image-allow <pattern...>',
      "registry images that may be pulled, as registry/repository with * wildcards, e.g. 127.0.0.1:5000/team/* (repeatable; default: any for the host's own socket, none for remote callers)",
    )
    .option(
      '--disk-max <size[,inodes]>',
      'largest disk limit a sandbox may ask for (env FORKBOX_DISK_MAX; default 1t,100m)',
      parseDiskSpec,
    )
    .option(
      '--retention <duration>',
      'how long ended sandboxes and their execs stay listed, e.g. 24h, 30m, 0 = not kept (env FORKBOX_RETENTION; default 24h); their exec output goes when they end',
    )
    .option(
      '--audit-max-size <size>',
      `audit.log is rotated to audit.log.1 past this size, e.g. 64m (env FORKBOX_AUDIT_MAX_SIZE; default 64m)`,
    )
    .option(
      '--network-max <mode>',
      "the widest network policy a sandbox may ask for: none, allow (an allow list through the daemon's egress proxy; default), or open (full egress through user-mode NAT behind the host filter)",
    )
    .option(
      '--network-allow <entries>',
      'names, *.suffix wildcards and CIDRs (comma-separated) that every allow list must stay within (default: any)',
    )
    .option(
      '--pool <n>',
      "sandboxes kept ready per template, so creates (and forkbox run) start at once; a template's own 'pool' overrides it (default 0: off)",
      parsePoolSize,
    )
    .option(
      '--socket-group <group>',
      `also serve a socket (0660 root:GROUP, at --socket, default ${DEFAULT_GROUP_SOCKET}) that members of GROUP use without root, each local user as their own tenant uid-<uid>`,
    )
    .option('--socket <path>', `where --socket-group's socket is bound (default ${DEFAULT_GROUP_SOCKET})`)
    .option(
      '--conformance-fixtures',
      "also serve the MCP conformance suite's test tools, resources and prompts on /mcp (for running the suite; never in production)",
    )
    .action(async (o: ServeFlags) => {
      const { stateDir } = ctx.globals();
      // Logs go to stderr, never stdout (stdout may be a protocol channel for a parent process).
      const log = pino(
        { level: process.env.FORKBOX_LOG_LEVEL ?? 'info', base: { pid: process.pid } },
        pino.destination(2),
      );
      const {
        explicitListen,
        tokenFile,
        oidc,
        listenSpec,
        listen,
        maxConcurrency,
        toolsets,
        auditMax,
        networkCap,
      } = serveSettings(o);
      // Refuse an unauthenticated network listener before taking the state dir.
      if (listen) checkListenSecurity(listen.host, tokenFile, oidc);
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
        maxBytes: auditMax,
        onError: (e) => log.warn({ err: e.message }, 'audit log write failed'),
      });
      const engine = await openEngine({
        stateDir,
        log,
        networkCap,
        audit,
        ...(o.diskDefault ? { diskDefault: o.diskDefault } : {}),
        ...(o.diskMax ? { diskMax: o.diskMax } : {}),
        ...(o.projectRoot ? { projectRoots: o.projectRoot.map((d) => resolve(d)) } : {}),
        ...(o.imageAllow ? { imageAllow: o.imageAllow } : {}),
        ...(o.retention === undefined ? {} : { retentionSeconds: parseRetention(o.retention) }),
        ...(o.pool === undefined ? {} : { poolSize: o.pool }),
      });
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
        if (listen) {
          try {
            listener = await startListener({
              engine: engine.engine,
              version: VERSION,
              host: listen.host,
              port: listen.port,
              tokenFile,
              oidc,
              audit,
              maxConcurrency,
              allowHosts: o.allowHost,
              allowOrigins: o.allowOrigin,
              toolsets,
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
            if (explicitListen !== undefined || !busy) throw e;
            log.warn({ listen: listenSpec }, `${(e as Error).message} Serving the Unix socket only.`);
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
