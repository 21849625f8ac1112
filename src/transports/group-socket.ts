/**
 * Where the group socket (`forkbox serve --socket-group GROUP`) lives, and checking that path: local
 * users reach it, and nobody but root can replace it. The socket is bound outside the state dir (which
 * stays 0711 root: not listable, its files 0600), in a directory of its own, mode 0750 root:GROUP; every
 * directory above must be root's, traversable, and not writable by anyone else unless sticky (like /tmp),
 * or a user could swap a directory on the path and have clients connect to their own socket.
 */
import { chmodSync, chownSync, lstatSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';
import { ForkboxError } from '../domain/errors.ts';

/** The group socket when `--socket` does not say (systemd's RuntimeDirectory=forkbox makes /run/forkbox). */
export const DEFAULT_GROUP_SOCKET = '/run/forkbox/forkbox.sock';

/** The gid of a group given by name (from /etc/group) or number. */
export function resolveGroup(group: string): number {
  if (/^\d{1,10}$/.test(group)) return Number(group);
  let text = '';
  try {
    text = readFileSync('/etc/group', 'utf8');
  } catch {}
  for (const line of text.split('\n')) {
    const [name, , gid] = line.split(':');
    if (name === group && gid !== undefined && /^\d+$/.test(gid)) return Number(gid);
  }
  throw new ForkboxError(
    'invalid_argument',
    `there is no group '${group}'. Create it ('groupadd ${group}'), add the users who may use forkbox ('usermod -aG ${group} USER'), then start the daemon again.`,
    { group },
  );
}

function unsafe(path: string, why: string): ForkboxError {
  return new ForkboxError(
    'invalid_argument',
    `the group socket's directory path is unsafe: ${path} ${why}. Pick a --socket under root-owned directories (the default is ${DEFAULT_GROUP_SOCKET}).`,
    { path },
  );
}

/**
 * Make the socket's directory (0750 root:gid) and check every directory above it. Throws when the
 * socket would be in the state dir or a directory on the path is not root's alone.
 */
export function prepareGroupSocketDir(socketPath: string, gid: number, stateDir: string): void {
  const sock = resolve(socketPath);
  const rel = relative(resolve(stateDir), sock);
  if (rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..')) {
    throw new ForkboxError(
      'invalid_argument',
      `the group socket ${sock} must not be inside the state dir ${stateDir}, which local users must not reach. Use another --socket (default ${DEFAULT_GROUP_SOCKET}).`,
      { socketPath: sock },
    );
  }
  const dir = dirname(sock);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  for (let d = dirname(dir); ; d = dirname(d)) {
    const st = lstatSync(d);
    if (!st.isDirectory()) throw unsafe(d, 'is not a directory (a symlink?)');
    if (st.uid !== 0) throw unsafe(d, `is owned by uid ${st.uid}, not root`);
    const sticky = (st.mode & 0o1000) !== 0;
    if ((st.mode & 0o022) !== 0 && !sticky) throw unsafe(d, 'is writable by others');
    if ((st.mode & 0o001) === 0) throw unsafe(d, 'is not traversable by other users (mode o+x)');
    if (d === dirname(d)) break;
  }
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw unsafe(dir, 'is not a directory (a symlink?)');
  chownSync(dir, 0, gid);
  chmodSync(dir, 0o750);
}
