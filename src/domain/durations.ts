/** Duration notation shared by the CLI and the daemon's settings: `30m`, `2h`, `1h30m`, `90s`. Pure. */
import { ForkboxError } from './errors.ts';

const DURATION_UNITS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };

/** `30m`, `2h`, `1h30m`, `90s`, `3600` (seconds), `1.5h` → seconds (may be fractional below 1 s). */
export function parseDuration(text: string): number {
  const t = text.trim().toLowerCase();
  const bad = () =>
    new ForkboxError(
      'invalid_argument',
      `'${text}' is not a duration. Write e.g. 30s, 30m, 2h, 1h30m or 3600 (seconds).`,
    );
  if (/^\d+(\.\d+)?$/.test(t)) {
    const s = Number(t);
    if (s <= 0) throw bad();
    return s;
  }
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;
  let total = 0;
  let consumed = 0;
  for (const m of t.matchAll(re)) {
    if (m.index !== consumed) throw bad();
    total += Number(m[1]) * (DURATION_UNITS[m[2] ?? ''] ?? Number.NaN);
    consumed += m[0].length;
  }
  if (consumed === 0 || consumed !== t.length || !(total > 0) || !Number.isFinite(total)) throw bad();
  return total;
}
