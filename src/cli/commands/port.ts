/** `forkbox port ID PORT`: publish a sandbox's loopback port on the host; prints 127.0.0.2:HOSTPORT. */
import type { Command } from 'commander';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { parsePort } from '../parse.ts';

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'port')
    .argument('<id>', 'sandbox id or name')
    .argument('<port>', 'a port a server listens on in the sandbox (127.0.0.1)', parsePort)
    .option(
      '--host-port <port>',
      'the host port to use (default: the published one, or a free one)',
      parsePort,
    )
    .action(async (id: string, port: number, o: { hostPort?: number }) => {
      const api = await ctx.api();
      const p = await api.exposePort(id, port, o.hostPort === undefined ? {} : { hostPort: o.hostPort });
      ctx.out().result(p, () => p.address);
    });
}
