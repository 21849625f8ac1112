/** Helpers for the disk abuse tests: programs run inside a sandbox, and what a sandbox costs the host. */
import { statSync } from 'node:fs';
import { join } from 'node:path';

export const MiB = 1024 * 1024;

/** Python run inside a sandbox: write `mb` MiB to `path`, print "<MiB written> <errno name or none>". */
export function fillProgram(path: string, mb: number): string[] {
  const code = `
import errno, os
n, err = 0, 'none'
try:
    with open(${JSON.stringify(path)}, 'wb', buffering=0) as f:
        chunk = b'\\xa5' * (1 << 20)
        for _ in range(${mb}):
            f.write(chunk)
            n += 1
        os.fsync(f.fileno())
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print(n, err)
`;
  return ['python3', '-c', code];
}

/** Python run inside a sandbox: create up to `count` empty files under `dir`, print "<made> <errno or none>". */
export function floodProgram(dir: string, count: number): string[] {
  const code = `
import errno, os
os.makedirs(${JSON.stringify(dir)}, exist_ok=True)
n, err = 0, 'none'
try:
    for i in range(${count}):
        os.close(os.open(${JSON.stringify(dir)} + '/' + str(i), os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644))
        n += 1
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print(n, err)
`;
  return ['python3', '-c', code];
}

export function parseOutcome(stdout: string): { n: number; err: string } {
  const m = /^(\d+) (\S+)\s*$/m.exec(stdout);
  if (!m) throw new Error(`unexpected output from the sandbox: ${JSON.stringify(stdout)}`);
  return { n: Number(m[1]), err: m[2] ?? '' };
}

/** Bytes the host has allocated for a sparse file (its blocks, not its apparent size). */
export function allocatedBytes(path: string): number {
  return statSync(path).blocks * 512;
}

/**
 * The host file whose growth is what a sandbox's writes cost the host: the btrfs driver's loopback image
 * (one per state dir), or the copy driver's per-sandbox ext4 image.
 */
export function hostFileOf(stateDir: string, storage: 'btrfs' | 'copy', sandboxId: string): string {
  return storage === 'btrfs' ? join(stateDir, 'btrfs.img') : join(stateDir, 'disks', `${sandboxId}.img`);
}
