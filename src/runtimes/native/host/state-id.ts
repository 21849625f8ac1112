/**
 * The state dir's identity: a short random id made once and kept in `<state>/state-id`. Every host object
 * a daemon makes outside its state dir carries it — cgroups live under `forkbox/<state-id>/…` — so that
 * gc and recovery of one daemon never touch another daemon's sandboxes (the cgroup tree is host-wide).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';

export const STATE_ID_RE = /^[0-9a-f]{12}$/;

/** Read the state dir's id, making it on first use (atomically: two processes agree on one id). */
export function stateIdOf(stateDir: string): string {
  const file = join(stateDir, 'state-id');
  const read = (): string | null => {
    try {
      return readFileSync(file, 'utf8').trim();
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  };
  let id = read();
  if (id === null) {
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(tmp, `${randomBytes(6).toString('hex')}\n`, { mode: 0o644 });
    chmodSync(tmp, 0o644);
    try {
      linkSync(tmp, file); // fails with EEXIST when another process made it first: theirs wins
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    } finally {
      rmSync(tmp, { force: true });
    }
    id = read();
  }
  if (id === null || !STATE_ID_RE.test(id)) {
    throw new ForkboxError(
      'conflict',
      `${file} does not hold a state id (12 hex digits). It is made by forkbox; if it was edited, restore it, or remove it only when no sandbox of this state dir is running.`,
      { file },
    );
  }
  return id;
}
