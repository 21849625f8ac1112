/** Where the CLI's state dir is, when --state-dir does not say. */
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';

export const SYSTEM_STATE_DIR = '/var/lib/forkbox';

export interface StateDirEnv {
  env?: NodeJS.ProcessEnv;
  uid?: number | undefined;
  home?: string;
}

/**
 * FORKBOX_STATE_DIR, else /var/lib/forkbox for root, else $XDG_DATA_HOME/forkbox or ~/.local/share/forkbox.
 * (A non-root user's own dir only helps once the rootless mode exists; it keeps a mistaken run from
 * touching the system's state.)
 */
export function defaultStateDir(o: StateDirEnv = {}): string {
  const env = o.env ?? process.env;
  const uid = 'uid' in o ? o.uid : process.getuid?.();
  if (env.FORKBOX_STATE_DIR) return resolve(env.FORKBOX_STATE_DIR);
  if (uid === 0) return SYSTEM_STATE_DIR;
  const xdg = env.XDG_DATA_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, 'forkbox');
  return join(o.home ?? homedir(), '.local', 'share', 'forkbox');
}
