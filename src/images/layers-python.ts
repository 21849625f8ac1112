/**
 * Finding python3 in a stack of layers: the layers are mounted as one read-only overlay (so whiteouts,
 * opaque directories and symlinks that cross layers resolve as a sandbox would see them) and searched.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { detachMount } from '../util/fs-calls.ts';
import { runOk } from '../util/subprocess.ts';
import { findPython } from './fsutil.ts';

/** `layers` newest first; `work` is a private temp dir the mount point is made in. */
export async function findPythonInLayers(layers: readonly string[], work: string): Promise<string | null> {
  const [only] = layers;
  if (layers.length === 1 && only) return findPython(only);
  const merged = join(work, 'merged');
  await mkdir(merged, { mode: 0o700 });
  await runOk('mount', ['-t', 'overlay', 'overlay', '-o', `ro,lowerdir=${layers.join(':')}`, merged]);
  try {
    return await findPython(merged);
  } finally {
    detachMount(merged);
  }
}
