import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Bytes a directory tree takes on its filesystem (allocated blocks, each inode once). Missing paths count
 * as 0. Mount points below `root` are not entered: what is mounted there (a sandbox's disk image, the
 * btrfs volume) is counted once, as the blocks of its image file, not again as the files inside it.
 */
export async function dirSize(root: string): Promise<number> {
  const seen = new Set<string>();
  let total = 0;
  let rootDev: number | undefined;
  async function walk(p: string): Promise<void> {
    let st: Awaited<ReturnType<typeof lstat>>;
    try {
      st = await lstat(p);
    } catch {
      return;
    }
    rootDev ??= st.dev;
    if (st.dev !== rootDev) return;
    const key = `${st.dev}:${st.ino}`;
    if (seen.has(key)) return;
    seen.add(key);
    total += st.blocks * 512;
    if (st.isDirectory()) {
      let names: string[] = [];
      try {
        names = await readdir(p);
      } catch {
        return;
      }
      for (const n of names) await walk(join(p, n));
    }
  }
  await walk(root);
  return total;
}
