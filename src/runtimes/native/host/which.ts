/** Finding host programs: the PATH, then the sbin directories a root daemon's PATH may lack. */
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';

/** The full path of an executable `bin`, or null when none is found. */
export function which(bin: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/sbin', '/sbin'])) {
    if (dir === '') continue;
    try {
      accessSync(join(dir, bin), constants.X_OK);
      return join(dir, bin);
    } catch {
      // next
    }
  }
  return null;
}
