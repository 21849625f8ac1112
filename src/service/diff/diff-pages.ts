/**
 * A diff's answer in pages. A diff can list hundreds of thousands of paths; one answer holding them all is
 * megabytes serialised in one go on the daemon's event loop, while every other caller waits. So an answer
 * holds at most `limit` entries (default 10,000), counted over added, removed, modified and renamed in that
 * order, with the totals in `counts` and a `nextCursor` for the rest. The whole diff is kept for its
 * cursors — at most HEAVY_CALLS_PER_TENANT per tenant (the oldest goes first), for 2 minutes after its last
 * page — so following a cursor costs a slice, not another walk.
 */
import { randomBytes } from 'node:crypto';
import { ForkboxError } from '../../domain/errors.ts';
import type { DiffResult } from '../api.ts';
import { HEAVY_CALLS_PER_TENANT } from './heavy-calls.ts';

export const DIFF_PAGE_DEFAULT = 10_000;
export const DIFF_PAGE_MAX = 50_000;
/** How long a diff stays for its cursors after its last page. */
export const DIFF_CURSOR_TTL_MS = 2 * 60_000;

const KINDS = ['added', 'removed', 'modified', 'renamed'] as const;

export interface DiffPageRequest {
  limit?: number;
  cursor?: string;
}

export interface DiffPages {
  /** The first page of a diff `compute` makes, keeping the rest for its cursor. */
  first(tenant: string, limit: number | undefined, compute: () => Promise<DiffResult>): Promise<DiffResult>;
  /** The page a cursor of `tenant` points at (of the diff it came with: its `a` and `b` say which). */
  next(tenant: string, cursor: string, limit: number | undefined): DiffResult;
}

interface Kept {
  tenant: string;
  full: DiffResult;
  touched: number;
}

function checkLimit(limit: number | undefined): number {
  const n = limit ?? DIFF_PAGE_DEFAULT;
  if (!Number.isInteger(n) || n < 1 || n > DIFF_PAGE_MAX)
    throw new ForkboxError(
      'invalid_argument',
      `limit must be a whole number from 1 to ${DIFF_PAGE_MAX}, not ${n}.`,
    );
  return n;
}

/** Entries [offset, offset + limit) of the diff's kinds laid end to end. */
function slice(full: DiffResult, offset: number, limit: number): DiffResult {
  const out: DiffResult = { ...full, nextCursor: null };
  const parts = out as unknown as Record<string, unknown[] | undefined>;
  let skip = offset;
  let room = limit;
  for (const kind of KINDS) {
    const all = full[kind];
    if (all === undefined) continue;
    const from = Math.min(skip, all.length);
    skip -= from;
    parts[kind] = all.slice(from, from + room);
    room -= parts[kind]?.length ?? 0;
  }
  // The unified text and the patch come with the first page only.
  if (offset > 0) {
    delete out.unified;
    delete out.patch;
  }
  return out;
}

function countsOf(d: DiffResult): NonNullable<DiffResult['counts']> {
  return {
    added: d.added.length,
    removed: d.removed.length,
    modified: d.modified.length,
    renamed: d.renamed?.length ?? 0,
  };
}

function totalOf(d: DiffResult): number {
  const c = d.counts ?? countsOf(d);
  return c.added + c.removed + c.modified + c.renamed;
}

export function createDiffPages(now: () => number = Date.now): DiffPages {
  const kept = new Map<string, Kept>();

  function sweep(): void {
    for (const [id, k] of kept) if (now() - k.touched > DIFF_CURSOR_TTL_MS) kept.delete(id);
  }

  function keep(tenant: string, full: DiffResult): string {
    sweep();
    const mine = [...kept].filter(([, k]) => k.tenant === tenant).sort((x, y) => x[1].touched - y[1].touched);
    while (mine.length >= HEAVY_CALLS_PER_TENANT) kept.delete(mine.shift()?.[0] ?? '');
    const id = randomBytes(12).toString('base64url');
    kept.set(id, { tenant, full, touched: now() });
    return id;
  }

  function page(id: string, full: DiffResult, offset: number, limit: number): DiffResult {
    const out = slice(full, offset, limit);
    out.nextCursor = offset + limit < totalOf(full) ? `${id}.${offset + limit}` : null;
    if (out.nextCursor === null) kept.delete(id);
    return out;
  }

  return {
    async first(tenant, limit, compute) {
      const n = checkLimit(limit);
      const full = await compute();
      full.counts = countsOf(full);
      if (totalOf(full) <= n) return { ...full, nextCursor: null };
      return page(keep(tenant, full), full, 0, n);
    },
    next(tenant, cursor, limit) {
      const n = checkLimit(limit);
      sweep();
      const m = /^([A-Za-z0-9_-]{16})\.(\d{1,9})$/.exec(cursor);
      const k = m ? kept.get(m[1] ?? '') : undefined;
      // Another tenant's cursor reads as an expired one: nothing says it exists.
      if (!m || !k || k.tenant !== tenant)
        throw new ForkboxError(
          'invalid_argument',
          `cursor '${cursor.slice(0, 40)}' is unknown or expired (a diff is kept ${DIFF_CURSOR_TTL_MS / 60_000} minutes after its last page); run the diff again without a cursor.`,
        );
      k.touched = now();
      return page(m[1] ?? '', k.full, Number(m[2]), n);
    },
  };
}
