/**
 * `project` on create: "DIR" or "DIR:/path" (docs/STORAGE.md, "Project directories"). DIR must be an
 * absolute host path whose real path (symlinks resolved) is a directory equal to or under one of the
 * daemon's project roots (`forkbox serve --project-root`); with no root configured every project is
 * refused. The mount path is absolute, normalised, and not `/` or a system directory.
 */
import { realpathSync, statSync } from 'node:fs';
import { isAbsolute, normalize } from 'node:path';
import { errors, ForkboxError } from '../../domain/errors.ts';
import { SIZES } from '../../domain/limits.ts';

export const DEFAULT_PROJECT_MOUNT = '/work';

/** Mount paths a project may not take or sit under: the system's and forkbox's own. */
const RESERVED = [
  '/.forkbox',
  '/proc',
  '/sys',
  '/dev',
  '/etc',
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib64',
  '/boot',
  '/run',
];

function realOrNull(p: string): string | null {
  try {
    return realpathSync(p);
  } catch {
    return null;
  }
}

export function resolveProject(
  spec: string,
  roots: readonly string[],
): { hostPath: string; mountPath: string } {
  if (typeof spec !== 'string' || spec.length === 0 || spec.length > SIZES.pathChars * 2)
    throw errors.invalid('project must be "DIR" or "DIR:/path" (an absolute host directory).');
  const colon = spec.lastIndexOf(':/');
  const dir = colon > 0 ? spec.slice(0, colon) : spec;
  const mountRaw = colon > 0 ? spec.slice(colon + 1) : DEFAULT_PROJECT_MOUNT;
  if (roots.length === 0)
    throw new ForkboxError(
      'permission_denied',
      "this daemon allows no project directories; start it with 'forkbox serve --project-root DIR' (repeatable) to allow directories under DIR.",
    );
  if (!isAbsolute(dir)) throw errors.invalid(`project directory '${dir}' must be an absolute path.`);
  const mountPath = normalize(mountRaw).replace(/\/+$/, '');
  if (
    !isAbsolute(mountRaw) ||
    mountPath === '' ||
    mountRaw.split('/').includes('..') ||
    /[,:\0\n]/.test(mountPath)
  )
    throw errors.invalid(
      `project mount path '${mountRaw}' must be an absolute path other than / (e.g. /work).`,
    );
  if (RESERVED.some((r) => mountPath === r || mountPath.startsWith(`${r}/`)))
    throw errors.invalid(
      `project mount path '${mountPath}' is a system directory; pick another (e.g. /work).`,
    );
  const real = realOrNull(dir);
  const under = (r: string) => real !== null && (real === r || real.startsWith(r === '/' ? '/' : `${r}/`));
  const realRoots = roots.map(realOrNull).filter((r): r is string => r !== null);
  if (real === null || !realRoots.some(under))
    throw new ForkboxError(
      'permission_denied',
      `project directory '${dir}' is not under an allowed project root (${roots.join(', ')}); pick a directory under one, or start the daemon with another --project-root.`,
    );
  if (!statSync(real).isDirectory()) throw errors.invalid(`project '${dir}' is not a directory.`);
  return { hostPath: real, mountPath };
}
