/**
 * The systemd unit of `forkbox service install` (docs/ARCHITECTURE.md, "Use without root"): the daemon
 * as root with the group socket at /run/forkbox/forkbox.sock (RuntimeDirectory), restarted on failure.
 * KillMode=process: sandboxes outlive a daemon restart (the daemon reattaches to them), so stopping
 * the unit signals the daemon alone. Arguments are quoted for systemd's command-line parser.
 */
import { ForkboxError } from '../domain/errors.ts';

export interface UnitOptions {
  /** The node executable and bin/forkbox.js, absolute. */
  node: string;
  entry: string;
  stateDir: string;
  socketGroup: string;
}

/** A group name as groupadd accepts them (and no character systemd or a shell would read). */
const GROUP_RE = /^[a-z_][a-z0-9_-]{0,31}$/;

function quote(arg: string): string {
  if (!/^[\x21-\x7e]+$/.test(arg) || /["'\\%$]/.test(arg)) {
    throw new ForkboxError(
      'invalid_argument',
      `'${arg}' cannot go in a systemd unit's command line: use a path without spaces, quotes, '\\', '%' or '$'.`,
    );
  }
  return arg;
}

export function serviceUnit(o: UnitOptions): string {
  if (!GROUP_RE.test(o.socketGroup)) {
    throw new ForkboxError(
      'invalid_argument',
      `'${o.socketGroup}' is not a group name (lowercase letters, digits, '_' and '-', up to 32).`,
    );
  }
  const argv = [o.node, o.entry, '--state-dir', o.stateDir, 'serve', '--socket-group', o.socketGroup];
  return `[Unit]
Description=forkbox daemon (sandboxes for AI agents), shared with the members of group ${o.socketGroup}
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
ExecStart=${argv.map(quote).join(' ')}
RuntimeDirectory=forkbox
RuntimeDirectoryMode=0750
RuntimeDirectoryPreserve=no
KillMode=process
TimeoutStopSec=45
Restart=on-failure
RestartSec=2
LimitNOFILE=65536

[Install]
WantedBy=multi-user.target
`;
}
