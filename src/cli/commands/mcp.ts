/**
 * `forkbox mcp`: an MCP server on stdio, as a client of the daemon (started when absent). stdout IS the
 * protocol channel: nothing but the SDK's transport may write to it, so every log goes to stderr.
 *
 * The connection opens a daemon session: sandboxes created through it (the default sandbox included),
 * unless made with `persistent: true`, outlive the connection by the session grace (default 10 min),
 * whatever ended it — stdin closed, process exit or crash — and are then removed. With `--session NAME`
 * the session is named: a later `forkbox mcp --session NAME` within the grace re-attaches it and finds its
 * default sandbox and REPL state again (protocol/mcp/http/session-policy.ts).
 */
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { Command } from 'commander';
import { pino } from 'pino';
import { ForkboxError } from '../../domain/errors.ts';
import {
  DEFAULT_SESSION_GRACE_MS,
  defaultSandboxOwner,
  namedSessionId,
  SESSION_NAME_RE,
} from '../../protocol/mcp/http/session-policy.ts';
import { createCallTracker } from '../../protocol/mcp/kit/tool-runner.ts';
import { createDefaultSandbox, createForkboxMcpServer } from '../../protocol/mcp/server.ts';
import { DEFAULT_TOOLSET, selectTools, TOOLSETS } from '../../protocol/mcp/toolsets.ts';
import { clientSocketPath, connectOrStartDaemon } from '../../transports/daemon-launcher.ts';
import { openSession } from '../../transports/daemon-session.ts';
import { VERSION } from '../../version.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { parseGrace, parseOutputBytes } from '../options/mcp-options.ts';

/** After stdin closes, exit even if a stray handle (an in-flight daemon call) would keep us alive. */
const EXIT_GRACE_MS = 5000;
/** How long cancelled calls get to finish cancelling (their commands killed) before the session closes. */
const CANCEL_GRACE_MS = 3000;

const collect = (v: string, prev: string[] = []) => [...prev, ...v.split(',').filter((s) => s !== '')];

interface McpFlags {
  toolset?: string[];
  session?: string;
  sessionGrace?: string;
  maxOutput?: string;
}

function sessionOptions(o: McpFlags) {
  const name = o.session ?? (process.env.FORKBOX_MCP_SESSION || undefined);
  if (name !== undefined && !SESSION_NAME_RE.test(name)) {
    throw new ForkboxError(
      'invalid_argument',
      `--session '${name}' is not a session name: 1-128 letters, digits, '.', '_', ':', '@' or '-'.`,
    );
  }
  const graceText = o.sessionGrace ?? (process.env.FORKBOX_MCP_SESSION_GRACE || undefined);
  const graceMs =
    graceText === undefined ? DEFAULT_SESSION_GRACE_MS : parseGrace(graceText, '--session-grace');
  return { name, graceMs };
}

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'mcp')
    .option(
      '--toolset <name>',
      `toolset to expose, repeatable: ${Object.keys(TOOLSETS).join(', ')} (default: ${DEFAULT_TOOLSET}; docs/TOOLSETS.md)`,
      collect,
    )
    .option(
      '--session <name>',
      "name this connection's session: a later `forkbox mcp --session NAME` within the grace gets its default sandbox and REPL state back (env FORKBOX_MCP_SESSION)",
    )
    .option(
      '--session-grace <duration>',
      "how long the session's sandboxes outlive the connection, or 0 (env FORKBOX_MCP_SESSION_GRACE; default 10m)",
    )
    .option('--max-output <size>', 'inline output per stream when a call does not say (default 32k)')
    .action(async (o: McpFlags) => {
      const toolsets = o.toolset ?? [DEFAULT_TOOLSET];
      selectTools(toolsets); // fail fast on an unknown toolset, before touching the daemon
      const { name, graceMs } = sessionOptions(o);
      const outputBytes =
        o.maxOutput === undefined ? undefined : parseOutputBytes(o.maxOutput, '--max-output');
      // pino.destination(2): stderr. Never stdout — it carries the protocol.
      const log = pino(
        { level: process.env.FORKBOX_LOG_LEVEL ?? 'warn', base: { pid: process.pid } },
        pino.destination(2),
      );
      const { stateDir } = ctx.globals();
      // How this process names itself in the daemon's audit log (its verified identity is its uid).
      const audited = 'mcp-stdio';
      const client = await connectOrStartDaemon({ stateDir, log, allowStart: true, client: audited });
      const session = await openSession(clientSocketPath(stateDir), {
        ...(name === undefined ? {} : { id: namedSessionId(name) }),
        graceMs,
        client: audited,
      }).catch((e: unknown) => {
        client.close();
        throw e;
      });
      const api = client.withSession(session.id);
      // One default sandbox per connection; a named session's is found again by its owner label.
      const defaults = createDefaultSandbox(
        undefined,
        name === undefined ? {} : { owner: defaultSandboxOwner('stdio', name) },
      );
      const inflight = createCallTracker();
      const handle = serveStdio(
        () =>
          createForkboxMcpServer({
            api,
            defaults,
            toolsets,
            log,
            version: VERSION,
            outputBytes,
            runner: { inflight },
          }),
        { onerror: (e) => log.warn({ err: e.message }, 'mcp stdio error') },
      );
      log.info(
        { session: session.id, named: name !== undefined, graceMs, toolsets },
        'forkbox MCP server on stdio',
      );

      const reason = await new Promise<string>((resolve) => {
        process.stdin.once('end', () => resolve('stdin closed'));
        process.stdin.once('close', () => resolve('stdin closed'));
        process.once('SIGTERM', () => resolve('SIGTERM'));
        process.once('SIGINT', () => resolve('SIGINT'));
        process.once('SIGHUP', () => resolve('SIGHUP'));
      });
      log.info({ reason }, 'forkbox MCP server stopping');
      setTimeout(() => process.exit(0), EXIT_GRACE_MS).unref();
      try {
        // Closing the server aborts the calls in flight: their commands and REPL code are cancelled,
        // through the daemon, so the client stays open until they have finished cancelling.
        await handle.close();
        await inflight.settled(CANCEL_GRACE_MS);
      } finally {
        // Ends the session's attachment: its non-persistent sandboxes go after the grace.
        session.close();
        client.close();
      }
    });
}
