/** How the console shows durations, sizes and CPU time (pure, for the pages and the live stream). */

/** `42s`, `5m 3s`, `2h 10m`, `3d 4h`. */
export function duration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** `512 B`, `3.2 MiB`. */
export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** CPU time used, from nanoseconds: `0.42 s`. */
export function cpuSeconds(ns: number): string {
  return `${(ns / 1e9).toFixed(2)} s`;
}

/** Time left before `expiresAt`, or `none`. */
export function ttlLeft(expiresAt: string | null, now: number): string {
  if (expiresAt === null) return 'none';
  const left = Date.parse(expiresAt) - now;
  return left <= 0 ? 'expiring' : duration(left);
}
