/** Size and count notation shared by the CLI and the daemon's settings: `512m`, `2g`, `100k` inodes. Pure. */
import { ForkboxError } from './errors.ts';

/** One mebibyte, bytes: the one definition every size in the code is written with. */
export const MiB = 1024 * 1024;

const SIZE_UNITS: Record<string, number> = {
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tb: 1024 ** 4,
  tib: 1024 ** 4,
};

/**
 * `512m`, `2g`, `1.5G`, `256` → bytes. A bare number is MiB by default (`--memory 512` means 512 MiB,
 * not 512 bytes); `bareUnit` says otherwise (1: bytes).
 */
export function parseSize(text: string, bareUnit = MiB): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  const suffix = (m?.[2] ?? '').toLowerCase();
  const unit = m ? (suffix === '' ? bareUnit : SIZE_UNITS[suffix]) : undefined;
  if (!m || unit === undefined) {
    throw new ForkboxError(
      'invalid_argument',
      `'${text}' is not a size. Write e.g. 512m, 2g or 1.5g (a bare number is MiB).`,
    );
  }
  const bytes = Math.round(Number(m[1]) * unit);
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new ForkboxError('invalid_argument', `size '${text}' must be greater than zero.`);
  }
  return bytes;
}

/** Bytes for people: `512 B`, `2 KiB`, `1.5 GiB`, `12.3 GiB` (powers of 1024, one decimal at most). */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : Number(v.toFixed(1))} ${units[i]}`;
}

const COUNT_UNITS: Record<string, number> = { '': 1, k: 1e3, m: 1e6 };

/** `100000`, `100k`, `1.5m` → a whole count (k and m are powers of 1000: these count files, not bytes). */
export function parseCount(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$/.exec(text);
  const n = m ? Math.round(Number(m[1]) * (COUNT_UNITS[(m[2] ?? '').toLowerCase()] ?? Number.NaN)) : 0;
  if (!m || !Number.isSafeInteger(n) || n <= 0) {
    throw new ForkboxError(
      'invalid_argument',
      `'${text}' is not a count. Write e.g. 100000, 100k or 1m (k = 1000, m = 1000000).`,
    );
  }
  return n;
}

/** A disk limit: bytes, and inodes when given. */
export interface DiskSpec {
  bytes: number;
  inodes?: number;
}

/** `SIZE[,INODES]`: `2g`, `2g,100k`. What `--disk` and FORKBOX_DISK_DEFAULT / FORKBOX_DISK_MAX take. */
export function parseDiskSpec(text: string): DiskSpec {
  const [size, inodes, ...rest] = text.split(',');
  if (size === undefined || size.trim() === '' || rest.length > 0) {
    throw new ForkboxError(
      'invalid_argument',
      `'${text}' is not a disk limit. Write SIZE or SIZE,INODES, e.g. 2g or 2g,100k.`,
    );
  }
  const out: DiskSpec = { bytes: parseSize(size) };
  if (inodes !== undefined && inodes.trim() !== '') out.inodes = parseCount(inodes);
  return out;
}
