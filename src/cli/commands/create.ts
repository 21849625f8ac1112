/** `forkbox create`: create a sandbox and print its id. */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { CreateSandboxRequest } from '../../service/api.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { collectKeyValue, parseDurationSeconds, parsePort } from '../parse.ts';
import { addLimitOptions, createShowingPull, type LimitOptions, limitsToRequest } from './limit-options.ts';

/** DIR[:/path] with DIR made absolute here (the daemon has another working directory). */
export function projectArg(spec: string): string {
  const colon = spec.lastIndexOf(':/');
  return colon > 0 ? `${resolve(spec.slice(0, colon))}${spec.slice(colon)}` : resolve(spec);
}

const collectPort = (v: string, acc: number[]): number[] => [...acc, parsePort(v)];

export function register(program: Command, ctx: CliContext): void {
  const cmd = defineCommand(program, 'create')
    .option('--name <name>', 'a name unique in its namespace (usable wherever an id is)')
    .option('-n, --namespace <ns>', 'its namespace (default: default); refer to it as NS/NAME from others')
    .option('--ttl <duration>', 'kill it after this long, e.g. 30m, 2h, 3600 (seconds)', parseDurationSeconds)
    .option('--label <K=V>', 'a label (repeatable)', collectKeyValue('label'))
    .option(
      '--project <dir[:/path]>',
      "a host directory under the daemon's --project-root, seen at /work copy-on-write",
    )
    .option(
      '--template <name>',
      "a template (see 'forkbox templates ls'): its image, Python modules pre-imported",
    )
    .option(
      '--port <port>',
      "publish a server on the sandbox's loopback port on a free host port (repeatable; see 'forkbox port')",
      collectPort,
      [] as number[],
    )
    .option(
      '--network <policy>',
      "none (default: loopback only), or allow:NAME,*.SUFFIX,CIDR,... (HTTP/HTTPS through the daemon's filtering proxy)",
    );
  addLimitOptions(cmd).action(
    async (
      o: LimitOptions & {
        name?: string;
        ttl?: number;
        label?: Record<string, string>;
        template?: string;
        network?: string;
        project?: string;
        port?: number[];
        namespace?: string;
      },
    ) => {
      const req: CreateSandboxRequest = limitsToRequest(o);
      if (o.template !== undefined) req.template = o.template;
      if (o.network !== undefined) req.network = o.network;
      if (o.name !== undefined) req.name = o.name;
      if (o.namespace !== undefined) req.namespace = o.namespace;
      if (o.ttl !== undefined) req.ttlSeconds = o.ttl;
      if (o.label !== undefined) req.labels = o.label;
      if (o.project !== undefined) req.project = projectArg(o.project);
      if (o.port !== undefined && o.port.length > 0) req.ports = o.port;
      const sb = await createShowingPull(await ctx.api(), req);
      ctx.out().result(sb, () => sb.id);
    },
  );
}
