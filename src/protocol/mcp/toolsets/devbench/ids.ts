/**
 * DevBench's ids over forkbox's. A container is a sandbox: `container_id` is the sandbox's id (an alias
 * is its name, so either is accepted where DevBench took an id). DevBench's exec ids were global, but
 * forkbox's execs live in a sandbox: `exec_id` carries both, `e_<sandbox id>.<exec id>`, so exec_poll and
 * exec_cancel (which take only the exec id) find the sandbox without any state in this server. A forged
 * exec_id reaches nothing the caller could not already reach: the sandbox is looked up in the caller's
 * scope, and the exec within that sandbox.
 */
import { ForkboxError } from '../../../../domain/errors.ts';

const EXEC_ID = /^e_([A-Za-z0-9][A-Za-z0-9_-]{0,62})\.([A-Za-z0-9][A-Za-z0-9_-]{0,62})$/;

export const devbenchExecId = (sandbox: string, exec: string): string => `e_${sandbox}.${exec}`;

export function parseExecId(id: string): { sandbox: string; exec: string } {
  const m = EXEC_ID.exec(id);
  if (!m?.[1] || !m[2]) {
    throw new ForkboxError(
      'not_found',
      `Exec not found: ${id.slice(0, 140)}. Use an exec_id that exec_start returned (list_execs lists the running ones).`,
    );
  }
  return { sandbox: m[1], exec: m[2] };
}
