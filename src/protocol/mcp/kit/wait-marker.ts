/**
 * Waiting for a marker in a file inside a sandbox, by reading the file through the agent (no shell, no
 * command line built from the path): the canonical wait_for_text and forkd's wait_for_text share it.
 * The file is scanned forward from where the last look ended, never read whole.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isForkboxError } from '../../../domain/errors.ts';
import type { ForkboxApi } from '../../../service/api.ts';

/** Bytes read per look. */
const PAGE = 4 * 1024 * 1024;
/** The longest wait one call may ask for, seconds (both tools' bound). */
export const WAIT_MAX_S = 600;

export interface MarkerWait {
  found: boolean;
  waitedMs: number;
  /** The file's size at the last look; null when it never existed. */
  size: number | null;
}

export async function waitForMarker(
  api: Pick<ForkboxApi, 'getSandbox' | 'readFile'>,
  id: string,
  o: { path: string; marker: string; timeoutMs: number; pollMs: number; signal: AbortSignal },
): Promise<MarkerWait> {
  // An unknown sandbox (or another tenant's) is not_found at once, not a file that is "not there yet".
  await api.getSandbox(id);
  const start = Date.now();
  const deadline = start + o.timeoutMs;
  let size: number | null = null;
  const marker = Buffer.from(o.marker, 'utf8');
  let scanned = 0; // bytes already searched (a marker may straddle the boundary: overlap by its length)
  for (;;) {
    let more = false;
    try {
      const offset = Math.max(0, scanned - marker.length + 1);
      const r = await api.readFile(id, o.path, { offset, length: PAGE });
      size = r.size;
      if (r.data.includes(marker)) return { found: true, waitedMs: Date.now() - start, size };
      scanned = r.size < scanned ? 0 : offset + r.data.length; // truncated or replaced: start over
      more = scanned < r.size;
    } catch (e) {
      if (!isForkboxError(e) || e.code !== 'not_found') throw e;
      scanned = 0;
    }
    if (more && !o.signal.aborted && Date.now() < deadline) continue;
    if (Date.now() + o.pollMs > deadline || o.signal.aborted) {
      return { found: false, waitedMs: Date.now() - start, size };
    }
    await sleep(o.pollMs, undefined, { signal: o.signal }).catch(() => undefined);
  }
}
