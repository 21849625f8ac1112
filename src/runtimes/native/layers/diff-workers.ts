/**
 * Diffs off the event loop. A diff walks, sorts and hashes trees whose size a sandbox controls (hundreds of
 * thousands of entries take seconds of CPU), so it runs in a worker thread: the daemon keeps answering
 * every other caller meanwhile. Workers are started on first use and kept: one more than a tenant may run
 * diffs at once (service/diff/heavy-calls.ts), so one tenant never holds them all; more diffs wait in order.
 * A diff past its deadline has its worker stopped, and a worker that dies (its heap limit, a bug) fails its
 * job with a clear error; the next job gets a new one.
 */
import type { Worker } from 'node:worker_threads';
import { ForkboxError } from '../../../domain/errors.ts';
import { HEAVY_CALLS_PER_TENANT } from '../../../service/diff/heavy-calls.ts';
import type { LayerChain, LayerDiff, LayerDiffOptions } from '../../../service/ports.ts';
import { startModuleWorker } from '../../../util/module-worker.ts';

export interface DiffJob {
  id: number;
  a: LayerChain;
  b: LayerChain;
  opts: LayerDiffOptions;
}
/**
 * A diff as it crosses back: its entry lists as JSON chunks of CHUNK entries. Cloning 200,000 entry
 * objects into the daemon's heap holds its event loop for a few hundred ms; chunks of text cross as
 * strings and are parsed a chunk per turn of the loop.
 */
export interface WireDiff {
  head: Omit<LayerDiff, ListKey>;
  lists: Record<ListKey, string[]>;
}
export type DiffReply =
  | { id: number; diff: WireDiff }
  | { id: number; error: ReturnType<ForkboxError['toJSON']> };

type ListKey = 'added' | 'removed' | 'modified';
const LISTS: readonly ListKey[] = ['added', 'removed', 'modified'];
const CHUNK = 2000;

/** In the worker: a diff for the wire. */
export function toWire(d: LayerDiff): WireDiff {
  const { added, removed, modified, ...head } = d;
  const chunks = (xs: unknown[]) => {
    const out: string[] = [];
    for (let i = 0; i < xs.length; i += CHUNK) out.push(JSON.stringify(xs.slice(i, i + CHUNK)));
    return out;
  };
  return { head, lists: { added: chunks(added), removed: chunks(removed), modified: chunks(modified) } };
}

/** In the daemon: the diff back from the wire, a chunk per turn of the event loop. */
export async function fromWire(w: WireDiff): Promise<LayerDiff> {
  const d: LayerDiff = { ...w.head, added: [], removed: [], modified: [] };
  for (const key of LISTS)
    for (const chunk of w.lists[key]) {
      await new Promise((r) => setImmediate(r));
      for (const e of JSON.parse(chunk) as LayerDiff[ListKey]) d[key].push(e);
    }
  return d;
}

export interface DiffWorkers {
  /** diffLayerChains (layer-diff.ts), run in a worker thread. */
  diff(a: LayerChain, b: LayerChain, opts?: LayerDiffOptions): Promise<LayerDiff>;
  /** Stop every worker; diffs still running fail. */
  close(): Promise<void>;
}

export interface DiffWorkersOptions {
  /** Workers at most (default: one more than a tenant's diffs at once). */
  size?: number;
  /** Each worker's heap limit, MiB (default 1024): a diff past it fails instead of growing the daemon. */
  heapMb?: number;
  /**
   * How long one diff may run, ms (default 2 minutes): past it its worker is stopped and the diff fails,
   * so no tenant holds the workers (a diff hashing two huge files of one size) while others wait.
   */
  deadlineMs?: number;
}

/** DiffWorkersOptions.deadlineMs's default. */
export const DIFF_DEADLINE_MS = 120_000;

const shuttingDown = () =>
  new ForkboxError('unavailable', 'the daemon is shutting down; retry the diff when it is back.');

interface Pending {
  job: DiffJob;
  resolve: (d: WireDiff) => void;
  reject: (e: Error) => void;
}

interface Slot {
  worker: Worker;
  busy: Pending | null;
  /** Ends the running diff at its deadline. */
  timer: NodeJS.Timeout | null;
  expired: boolean;
}

export function createDiffWorkers(opts: DiffWorkersOptions = {}): DiffWorkers {
  const size = opts.size ?? HEAVY_CALLS_PER_TENANT + 1;
  const heapMb = opts.heapMb ?? 1024;
  const deadlineMs = opts.deadlineMs ?? DIFF_DEADLINE_MS;
  const slots: Slot[] = [];
  const queue: Pending[] = [];
  let nextId = 1;
  let closed = false;

  const start = (): Slot => {
    const worker = startModuleWorker(new URL('./diff-worker.ts', import.meta.url), import.meta.url, {
      resourceLimits: { maxOldGenerationSizeMb: heapMb },
    });
    const slot: Slot = { worker, busy: null, timer: null, expired: false };
    const settle = (): Pending | null => {
      if (slot.timer) clearTimeout(slot.timer);
      slot.timer = null;
      const p = slot.busy;
      slot.busy = null;
      return p;
    };
    worker.on('message', (reply: DiffReply) => {
      if (slot.busy?.job.id !== reply.id) return;
      const p = settle() as Pending;
      if ('diff' in reply) p.resolve(reply.diff);
      else p.reject(new ForkboxError(reply.error.code, reply.error.message, reply.error.details));
      worker.unref(); // an idle worker never keeps the daemon alive
      pump();
    });
    const gone = (why: string) => {
      const i = slots.indexOf(slot);
      if (i >= 0) slots.splice(i, 1);
      const p = settle();
      if (closed) p?.reject(shuttingDown());
      else if (slot.expired)
        p?.reject(
          new ForkboxError(
            'resource_exhausted',
            `the diff ran past its ${deadlineMs / 1000} s and was stopped. Narrow it with paths (large files of one size are hashed whole).`,
            { deadlineMs },
          ),
        );
      else
        p?.reject(
          new ForkboxError(
            'resource_exhausted',
            `the diff stopped: ${why}. Narrow it with paths, or diff fewer changes at once.`,
          ),
        );
      pump();
    };
    worker.on('error', (e) => gone(e.message));
    worker.on('exit', (code) => gone(`its worker ended (exit ${code})`));
    slots.push(slot);
    return slot;
  };

  const pump = () => {
    while (!closed && queue.length > 0) {
      const idle = slots.find((s) => s.busy === null);
      if (!idle && slots.length >= size) return;
      const p = queue.shift() as Pending;
      let slot: Slot;
      try {
        slot = idle ?? start();
      } catch (e) {
        p.reject(e instanceof Error ? e : new Error(String(e))); // a worker that cannot start fails its job only
        continue;
      }
      slot.busy = p;
      slot.expired = false;
      slot.timer = setTimeout(() => {
        slot.expired = true;
        void slot.worker.terminate();
      }, deadlineMs);
      slot.worker.ref();
      slot.worker.postMessage(p.job);
    }
  };

  return {
    diff(a, b, o = {}) {
      if (closed) return Promise.reject(shuttingDown());
      return new Promise<WireDiff>((resolve, reject) => {
        queue.push({ job: { id: nextId++, a, b, opts: o }, resolve, reject });
        pump();
      }).then(fromWire);
    },
    async close() {
      closed = true;
      for (const p of queue.splice(0)) p.reject(shuttingDown());
      await Promise.all(slots.map((s) => s.worker.terminate()));
    },
  };
}
