/**
 * Whether the sandboxes' root — an unprivileged host uid — can walk down to the state dir. runc starts a
 * template as that uid on a root under `<state>/templates/`, and binds the agent code and the inbox from
 * the state dir: every directory above it needs search (x) permission for that uid, or the first create
 * fails deep inside runc with "permission denied".
 */
import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export interface Blocker {
  dir: string;
  mode: number;
}

/** The first directory from `/` down to `dir` that `uid`/`gid` cannot search, or null when none. */
export function untraversable(dir: string, uid: number, gid: number): Blocker | null {
  const chain: string[] = [];
  for (let d = resolve(dir); ; d = dirname(d)) {
    chain.unshift(d);
    if (d === '/') break;
  }
  for (const d of chain) {
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(d);
    } catch {
      return null; // not made yet: whoever makes it sets its mode
    }
    const mode = Number(st.mode) & 0o7777;
    const ok =
      st.uid === uid ? (mode & 0o100) !== 0 : st.gid === gid ? (mode & 0o010) !== 0 : (mode & 0o001) !== 0;
    if (!ok) return { dir: d, mode };
  }
  return null;
}

export function traverseAdvice(b: Blocker, stateDir: string, uid: number): string {
  return `the sandboxes' root user (host uid ${uid}) cannot reach the state dir ${stateDir}: ${b.dir} has mode ${b.mode.toString(8).padStart(4, '0')} and no search permission for it. Run 'chmod o+x ${b.dir}' (search only: nobody can list it), or use a --state-dir whose parent directories are all searchable (e.g. under /var/lib).`;
}
