/**
 * The dashboard's live stream (server-sent events): every second the tenant's sandboxes are read again
 * and, when the table or the tree changed, an `update` event carries both as HTML fragments. Bounded:
 * at most `maxPerTenant` streams per tenant (429 past it), a `: ping` comment every 15 s, the caller's
 * token checked again every 5 s (a revoked token gets a `logout` event and the stream ends), and each
 * stream closed after 30 minutes (EventSource reconnects on its own).
 */
import type { Context } from 'hono';
import { type SSEStreamingApi, streamSSE } from 'hono/streaming';
import { ForkboxError } from '../../domain/errors.ts';
import { type DashboardData, forkTree, sandboxRows } from './pages/dashboard.ts';

export const DEFAULT_STREAMS_PER_TENANT = 8;
const TICK_MS = 1000;
const PING_EVERY = 15;
const RECHECK_EVERY = 5;
const MAX_TICKS = 1800;

export interface StreamSource {
  tenant: string;
  load(): Promise<DashboardData>;
  /** False once the session's token is no longer accepted. */
  stillValid(): Promise<boolean>;
}

export interface ConsoleStreams {
  open(c: Context, source: StreamSource): Response;
  /**
   * One of the tenant's stream slots for another console stream (an exec's output, a terminal): the
   * release to call when it ends. Throws resource_exhausted when the tenant has none left.
   */
  reserve(tenant: string): () => void;
  /** Streams open for a tenant. */
  count(tenant: string): number;
  /** End every stream (daemon shutdown). */
  closeAll(): void;
}

export function createConsoleStreams(maxPerTenant = DEFAULT_STREAMS_PER_TENANT): ConsoleStreams {
  const counts = new Map<string, number>();
  const live = new Set<SSEStreamingApi>();
  const adjust = (tenant: string, by: number) => {
    const n = (counts.get(tenant) ?? 0) + by;
    if (n <= 0) counts.delete(tenant);
    else counts.set(tenant, n);
  };
  const reserve = (tenant: string) => {
    if ((counts.get(tenant) ?? 0) >= maxPerTenant) {
      throw new ForkboxError(
        'resource_exhausted',
        `too many console streams for tenant '${tenant}' (limit ${maxPerTenant}). Close some console tabs.`,
        { limit: maxPerTenant },
      );
    }
    adjust(tenant, 1);
    let released = false;
    return () => {
      if (!released) adjust(tenant, -1);
      released = true;
    };
  };
  return {
    reserve,
    open(c, source) {
      const release = reserve(source.tenant);
      return streamSSE(c, async (stream) => {
        live.add(stream);
        try {
          await run(stream, source);
        } catch {
          // The client went away, or the engine failed a read: end this stream (EventSource retries).
        } finally {
          live.delete(stream);
          release();
        }
      });
    },
    count: (tenant) => counts.get(tenant) ?? 0,
    closeAll() {
      for (const s of live) s.abort();
    },
  };
}

async function run(stream: SSEStreamingApi, source: StreamSource): Promise<void> {
  let last = '';
  for (let tick = 0; tick < MAX_TICKS && !stream.aborted && !stream.closed; tick++) {
    if (tick > 0 && tick % RECHECK_EVERY === 0 && !(await source.stillValid())) {
      await stream.writeSSE({ event: 'logout', data: '{}' });
      return;
    }
    const data = await source.load();
    const now = Date.now();
    const payload = JSON.stringify({
      sandboxes: sandboxRows(data, now).toString(),
      tree: forkTree(data).toString(),
    });
    if (payload !== last) {
      last = payload;
      await stream.writeSSE({ event: 'update', data: payload });
    } else if (tick % PING_EVERY === 0) {
      await stream.write(': ping\n\n');
    }
    await stream.sleep(TICK_MS);
  }
}
