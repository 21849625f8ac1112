/** Filling a fresh layer directory from a rootfs tarball or an existing directory. */
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { ForkboxError } from '../domain/errors.ts';
import { runOk } from '../util/subprocess.ts';
import { hashDirectory, sha256File } from './fsutil.ts';

export type ImportKind = 'tar' | 'dir';

export async function sourceKind(source: string): Promise<ImportKind> {
  let st: Awaited<ReturnType<typeof stat>>;
  try {
    st = await stat(source);
  } catch {
    throw new ForkboxError(
      'not_found',
      `cannot import '${source}': no such file or directory. Give a rootfs .tar/.tar.gz or a directory.`,
      {
        source,
      },
    );
  }
  if (st.isDirectory()) return 'dir';
  if (st.isFile()) return 'tar';
  throw new ForkboxError(
    'invalid_argument',
    `cannot import '${source}': not a regular file or a directory.`,
    { source },
  );
}

/** Content key: sha256 of the tarball's bytes, or of a metadata walk of the directory. */
export async function contentKey(source: string, kind: ImportKind, salt: string): Promise<string> {
  const inner = kind === 'tar' ? await sha256File(source) : await hashDirectory(source);
  return createHash('sha256').update(`import\0${kind}\0${inner}\0${salt}`).digest('hex');
}

/** Extract or copy `source` into the (existing, empty) directory `target`, keeping owners, modes and xattrs. */
export async function populate(source: string, kind: ImportKind, target: string): Promise<void> {
  const src = resolve(source);
  if (kind === 'dir') {
    // -a keeps owners (numeric), modes, hardlinks, symlinks and xattrs; "src/." copies the contents only.
    await runOk('cp', ['-a', '--reflink=auto', `${src}/.`, target]);
    return;
  }
  await runOk('tar', [
    '-x',
    '-f',
    src,
    '-C',
    target,
    // Numeric ids as stored: mapping names through the host's /etc/passwd would give image files host owners.
    '--numeric-owner',
    '--same-owner',
    '--same-permissions',
    // Capabilities, ACLs and user xattrs belong to the image. trusted.* is excluded on purpose: those are
    // overlayfs's own control xattrs (redirect, metacopy, opaque), and a crafted tarball must not be able to
    // steer the overlay mount; opaque markers come only from `.wh..wh..opq` entries.
    '--xattrs',
    '--xattrs-include=security.capability',
    '--xattrs-include=user.*',
    '--acls',
    // GNU tar (unlike some tar libraries) also refuses members with `..` and strips leading `/`, and defers
    // creating symlinks that could redirect later members outside `target`.
  ]);
}
