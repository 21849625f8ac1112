/**
 * What the gvisor runtime can do, and the error a call gets for what it cannot: it names the runtime and
 * says to use the native one, never a silent no-op.
 */
import { ForkboxError } from '../../domain/errors.ts';
import type { RuntimeCapabilities } from '../../service/ports.ts';

export const GVISOR_CAPABILITIES: RuntimeCapabilities = {
  forkProcessState: true,
  forkProcesses: true,
  pause: true,
  limits: { memory: true, pids: false, cpu: true, disk: false },
  network: false,
  unsupported: [
    'network allow/open (gvisor sandboxes have loopback only)',
    'published ports',
    'disk limits (writes are held in the sandbox memory, bounded by its memory limit)',
    'pids limits',
    'diff and projects',
    'the browser',
    'recovery after a daemon restart',
    'images without python3',
  ],
};

export function unsupported(what: string): ForkboxError {
  return new ForkboxError(
    'invalid_argument',
    `the gvisor runtime does not support ${what} yet; create the sandbox with runtime native for it.`,
    { runtime: 'gvisor' },
  );
}
