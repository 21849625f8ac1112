/** The options of `forkbox serve` (its action is in commands/serve.ts; the OIDC ones in oidc-options.ts). */
import type { Command } from 'commander';
import { parseDiskSpec } from '../../domain/sizes.ts';
import { DEFAULT_MAX_CONCURRENCY } from '../../protocol/http/limits.ts';
import { DEFAULT_TOOLSET, TOOLSETS } from '../../protocol/mcp/toolsets.ts';
import { DEFAULT_GROUP_SOCKET } from '../../transports/group-socket.ts';
import { DEFAULT_LISTEN } from '../../transports/http-server.ts';
import { parsePoolSize, parseRuntimeName } from '../parse.ts';

/** A repeatable option whose values may also be comma-separated. */
export const collect = (v: string, prev: string[] = []) => [...prev, ...v.split(',').filter((s) => s !== '')];

export function addServeOptions(cmd: Command): Command {
  return cmd
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
      '--runtime <name>',
      'the runtime of sandboxes whose create names none: native (default) or gvisor (needs runsc; `forkbox doctor` checks it)',
      parseRuntimeName,
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
    );
}
