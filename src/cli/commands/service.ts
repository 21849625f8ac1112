/**
 * `forkbox service install --socket-group GROUP`: write the systemd unit that runs the daemon for the
 * members of GROUP (cli/service-unit.ts), and say what to run next. It neither needs nor calls systemd.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { ForkboxError } from '../../domain/errors.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { serviceUnit } from '../service-unit.ts';

const UNIT_NAME = 'forkbox.service';

export function register(program: Command, ctx: CliContext): void {
  const service = defineCommand(program, 'service');
  service
    .command('install')
    .description('write the systemd unit forkbox.service: the daemon as root, its group socket for GROUP')
    .requiredOption('--socket-group <group>', 'the group whose members may use the daemon')
    .option('--unit-dir <dir>', 'where to write the unit', '/etc/systemd/system')
    .action((o: { socketGroup: string; unitDir: string }) => {
      if (process.getuid?.() !== 0 && o.unitDir === '/etc/systemd/system') {
        throw new ForkboxError(
          'permission_denied',
          "installing the unit needs root: run 'sudo forkbox service install …'.",
        );
      }
      const { stateDir } = ctx.globals();
      const unit = serviceUnit({
        node: process.execPath,
        entry: fileURLToPath(new URL('../../../bin/forkbox.js', import.meta.url)),
        stateDir: resolve(stateDir),
        socketGroup: o.socketGroup,
      });
      mkdirSync(o.unitDir, { recursive: true });
      const path = join(resolve(o.unitDir), UNIT_NAME);
      writeFileSync(path, unit, { mode: 0o644 });
      ctx
        .out()
        .result(
          { unit: path, socketGroup: o.socketGroup },
          () =>
            `wrote ${path}. Start it: 'systemctl daemon-reload && systemctl enable --now forkbox'; add users: 'usermod -aG ${o.socketGroup} USER' (they log in again).`,
        );
    });
}
