/** `forkbox serve`: the daemon. Owns the state dir (the engine takes its lock) and serves the local API. */
import { mkdirSync } from 'node:fs';
import type { Command } from 'commander';
import { pino } from 'pino';
import { createLocalApp } from '../../protocol/rest/local-app.ts';
import { DEFAULT_TENANT } from '../../service/engine.ts';
import { socketPathFor } from '../../transports/daemon-launcher.ts';
import { serveUnix } from '../../transports/unix-server.ts';
import { VERSION } from '../../version.ts';
import type { CliContext } from '../context.ts';

export function register(program: Command, ctx: CliContext): void {
  program
    .command('serve')
    .description(
      'run the forkbox daemon: owns the state dir and serves the local API on <state-dir>/forkbox.sock',
    )
    .action(async () => {
      const { stateDir } = ctx.globals();
      // Logs go to stderr, never stdout (stdout may be a protocol channel for a parent process).
      const log = pino(
        { level: process.env.FORKBOX_LOG_LEVEL ?? 'info', base: { pid: process.pid } },
        pino.destination(2),
      );
      mkdirSync(stateDir, { recursive: true, mode: 0o755 });
      // Loaded here, not at the top: the engine (SQLite, FFI, runtimes) is only needed by the daemon, and
      // every other command should start fast.
      const { openEngine } = await import('../../composition.ts');
      const engine = await openEngine({ stateDir, log });
      let server: Awaited<ReturnType<typeof serveUnix>>;
      try {
        server = await serveUnix(
          createLocalApp(engine.api, {
            version: VERSION,
            sessions: {
              scoped: (session) => engine.engine.scoped({ tenant: DEFAULT_TENANT, session }),
              attach: (session) => engine.engine.attachSession(session),
            },
          }),
          socketPathFor(stateDir),
        );
      } catch (e) {
        await engine.close();
        throw e;
      }
      log.info({ socket: server.socketPath, stateDir, version: VERSION }, 'forkbox daemon listening');

      const signal = await new Promise<NodeJS.Signals>((resolve) => {
        process.once('SIGTERM', () => resolve('SIGTERM'));
        process.once('SIGINT', () => resolve('SIGINT'));
      });
      log.info({ signal }, 'shutting down (send the signal again to exit at once)');
      const force = () => process.exit(1);
      process.once('SIGTERM', force);
      process.once('SIGINT', force);
      try {
        await server.close();
      } finally {
        await engine.close();
      }
      log.info('forkbox daemon stopped');
      log.flush();
    });
}
