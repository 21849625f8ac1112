/**
 * `forkbox mcp`: an MCP server on stdio, as a client of the daemon (started when absent). stdout IS the
 * protocol channel: nothing but the SDK's transport may write to it, so every log goes to stderr.
 *
 * The connection opens a daemon session: sandboxes created through it (the default sandbox included) are
 * removed by the daemon when the connection ends — stdin closed, process exit or crash — unless they
 * were created with `persistent: true`.
 */
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { Command } from 'commander';
import { pino } from 'pino';
import { createDefaultSandbox, createForkboxMcpServer } from '../../protocol/mcp/server.ts';
import { DEFAULT_TOOLSET, selectTools } from '../../protocol/mcp/toolsets.ts';
import { connectOrStartDaemon } from '../../transports/daemon-launcher.ts';
import { VERSION } from '../../version.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';

/** After stdin closes, exit even if a stray handle (an in-flight daemon call) would keep us alive. */
const EXIT_GRACE_MS = 3000;

const collect = (v: string, prev: string[] = []) => [...prev, ...v.split(',').filter((s) => s !== '')];

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'mcp')
    .option('--toolset <name>', `toolset to expose, repeatable (default: ${DEFAULT_TOOLSET})`, collect)
    .action(async (o: { toolset?: string[] }) => {
      const toolsets = o.toolset ?? [DEFAULT_TOOLSET];
      selectTools(toolsets); // fail fast on an unknown toolset, before touching the daemon
      // pino.destination(2): stderr. Never stdout — it carries the protocol.
      const log = pino(
        { level: process.env.FORKBOX_LOG_LEVEL ?? 'warn', base: { pid: process.pid } },
        pino.destination(2),
      );
      const client = await connectOrStartDaemon({ stateDir: ctx.globals().stateDir, log, allowStart: true });
      const session = await client.openSession().catch((e: unknown) => {
        client.close();
        throw e;
      });
      const api = client.withSession(session.id);
      // One stdio connection = one default sandbox.
      const defaults = createDefaultSandbox();
      const handle = serveStdio(
        () => createForkboxMcpServer({ api, defaults, toolsets, log, version: VERSION }),
        { onerror: (e) => log.warn({ err: e.message }, 'mcp stdio error') },
      );
      log.info({ session: session.id, toolsets }, 'forkbox MCP server on stdio');

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
        await handle.close();
      } finally {
        // Ends the session: the daemon then removes this connection's non-persistent sandboxes.
        session.close();
        client.close();
      }
    });
}
