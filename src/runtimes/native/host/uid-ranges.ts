/**
 * Host uid/gid ranges for templates, reserved host-wide (docs/SECURITY.md, "User namespaces"). Each
 * template gets a range of its own: 64 blocks of 65536 ids, block 0 for the template itself and one block
 * for each unrelated sandbox made from it, so no two sandboxes (and no two daemons) share a host uid, and
 * the kernel's per-uid counters (pipe buffers, inotify, message queues, processes) are not shared either.
 *
 * Every daemon on the host reserves from one registry file under a file lock (like /etc/subuid, but for
 * ranges in use now): an entry is live while the process holding it runs — the reserving daemon until the
 * template's PID 1 exists, then that PID 1 — so a crash or a reboot frees what it held without a sweep.
 * Ranges listed in /etc/subuid or /etc/subgid (users' subordinate ids) and ranges some process already
 * runs in are never handed out.
 */
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import { isAlive } from './proc.ts';
import type { Sys } from './sys.ts';
import type { UidRange } from './uid-range.ts';

/** Ids per block: one user namespace's worth (container ids 0..65535). */
export const BLOCK_SIZE = 65536;
/** Blocks per template range: the template's own (0) and 63 for sandboxes. */
export const BLOCKS_PER_RANGE = 64;
export const RANGE_SIZE = BLOCK_SIZE * BLOCKS_PER_RANGE;

/** Where ranges are taken from: [start, end), both multiples of RANGE_SIZE. */
export interface UidSpace {
  start: number;
  end: number;
}

/**
 * Above useradd's subordinate ids (100000..600100000 by default), LXD's (1000000..1001000000) and below
 * 2^31 (ids some tools still read as signed); systemd-nspawn picks from a wider space but checks what is
 * in use, as this registry does. 192 template ranges.
 */
export const DEFAULT_UID_SPACE: UidSpace = { start: 0x40000000, end: 0x70000000 };

/** The registry every daemon on the host shares (docs/SECURITY.md). */
export const DEFAULT_UID_REGISTRY = '/run/forkbox-ids';

/** `FORKBOX_UID_SPACE=START-END`: a space of host ids, e.g. for two forkbox containers on one host. */
export function parseUidSpace(text: string | undefined): UidSpace {
  if (text === undefined || text.trim() === '') return DEFAULT_UID_SPACE;
  const m = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(text);
  const start = m ? Number(m[1]) : Number.NaN;
  const end = m ? Number(m[2]) : Number.NaN;
  const ok =
    Number.isSafeInteger(start) &&
    Number.isSafeInteger(end) &&
    start >= RANGE_SIZE &&
    end <= 2 ** 32 - 1 &&
    start % RANGE_SIZE === 0 &&
    end % RANGE_SIZE === 0 &&
    end - start >= RANGE_SIZE;
  if (!ok)
    throw new ForkboxError(
      'invalid_argument',
      `FORKBOX_UID_SPACE must be START-END: host ids, both multiples of ${RANGE_SIZE}, START at least ${RANGE_SIZE}, END at most 2^32-1, room for one range at least (not '${text}'). Default: ${DEFAULT_UID_SPACE.start}-${DEFAULT_UID_SPACE.end}.`,
    );
  return { start, end };
}

/** The process a reservation lives with. */
export interface RangeHolder {
  pid: number;
  startTime: number;
}

/** Who a range is for (for people reading the registry, and for a daemon's restart). */
export interface RangeClaim {
  stateId: string;
  stateDir: string;
  template: string;
}

interface Entry extends RangeClaim, RangeHolder {
  start: number;
  at: number;
}

export interface UidRanges {
  readonly space: UidSpace;
  /** A free range for a template about to start; held by this process until `hold` names its PID 1. */
  reserve(claim: RangeClaim): UidRange;
  /** The range starting at `start` now lives with `holder` (the template's PID 1). */
  hold(start: number, holder: RangeHolder): void;
  /** After a restart: a running template's range, registered again if the registry lost it. */
  adopt(start: number, claim: RangeClaim, holder: RangeHolder): void;
  /** The range is free again (its template is gone). */
  release(start: number): void;
}

export interface UidRangesDeps {
  sys: Pick<Sys, 'tryLockExclusive'>;
  /** The registry's directory (DEFAULT_UID_REGISTRY); made 0700 root. */
  dir: string;
  space?: UidSpace;
  /** This process, the holder of a reservation until its template runs. */
  self?: RangeHolder;
  /** /etc/subuid and /etc/subgid (tests point them elsewhere). */
  subidFiles?: string[];
  /** How long to wait for another daemon's hold on the lock. */
  lockWaitMs?: number;
}

/** Ranges of users' subordinate ids (`name:start:count` lines). */
export function subordinateRanges(files: string[]): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = [];
  for (const f of files) {
    let text: string;
    try {
      text = readFileSync(f, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      const parts = line.trim().split(':');
      if (parts.length !== 3) continue;
      const start = Number(parts[1]);
      const count = Number(parts[2]);
      if (Number.isSafeInteger(start) && Number.isSafeInteger(count) && count > 0)
        out.push({ start, end: start + count });
    }
  }
  return out;
}

/** Real uids of every process on the host that falls in [start, end). */
function processesIn(start: number, end: number): number[] {
  const found: number[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return found;
  }
  for (const n of names) {
    if (!/^\d+$/.test(n)) continue;
    let status: string;
    try {
      status = readFileSync(`/proc/${n}/status`, 'utf8');
    } catch {
      continue;
    }
    const m = /\nUid:\s+(\d+)/.exec(status);
    const uid = m ? Number(m[1]) : -1;
    if (uid >= start && uid < end) found.push(Number(n));
  }
  return found;
}

function selfHolder(): RangeHolder {
  const text = readFileSync('/proc/self/stat', 'utf8');
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { pid: process.pid, startTime: Number(rest[19]) };
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export function createUidRanges(deps: UidRangesDeps): UidRanges {
  const space = deps.space ?? DEFAULT_UID_SPACE;
  const file = join(deps.dir, 'ranges.json');
  const self = deps.self ?? selfHolder();
  const subids = deps.subidFiles ?? ['/etc/subuid', '/etc/subgid'];

  /** Run `fn` on the live entries under the registry's lock; what it returns is written back. */
  function locked<T>(fn: (entries: Entry[]) => { entries: Entry[]; result: T }): T {
    mkdirSync(deps.dir, { recursive: true, mode: 0o700 });
    const fd = openSync(join(deps.dir, 'lock'), 'a', 0o600);
    try {
      const until = Date.now() + (deps.lockWaitMs ?? 10000);
      while (!deps.sys.tryLockExclusive(fd)) {
        if (Date.now() > until)
          throw new ForkboxError(
            'busy',
            `another process holds the host's uid range registry (${deps.dir}/lock) for over ${deps.lockWaitMs ?? 10000} ms; try again.`,
          );
        sleepSync(5);
      }
      const { entries, result } = fn(read().filter((e) => isAlive(e.pid, e.startTime)));
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, `${JSON.stringify({ version: 1, ranges: entries }, null, 1)}\n`, { mode: 0o600 });
      renameSync(tmp, file);
      return result;
    } finally {
      closeSync(fd); // releases the lock
    }
  }

  function read(): Entry[] {
    if (!existsSync(file)) return [];
    try {
      const doc = JSON.parse(readFileSync(file, 'utf8')) as { ranges?: unknown };
      return Array.isArray(doc.ranges)
        ? (doc.ranges as Entry[]).filter(
            (e) =>
              Number.isSafeInteger(e?.start) &&
              Number.isSafeInteger(e?.pid) &&
              Number.isSafeInteger(e?.startTime),
          )
        : [];
    } catch {
      // A torn or foreign file: every live template re-registers on its daemon's next start (adopt).
      return [];
    }
  }

  const overlaps = (a: { start: number; end: number }, start: number) =>
    a.start < start + RANGE_SIZE && start < a.end;

  return {
    space,

    reserve(claim) {
      return locked((entries) => {
        const taken = new Set(entries.map((e) => e.start));
        const users = subordinateRanges(subids);
        for (let start = space.start; start + RANGE_SIZE <= space.end; start += RANGE_SIZE) {
          if (taken.has(start) || users.some((u) => overlaps(u, start))) continue;
          // Something runs there already (a daemon whose registry was lost, another tool): not ours.
          if (processesIn(start, start + RANGE_SIZE).length > 0) continue;
          const entry: Entry = { start, ...claim, ...self, at: Date.now() };
          return { entries: [...entries, entry], result: { hostStart: start, size: RANGE_SIZE } };
        }
        throw new ForkboxError(
          'resource_exhausted',
          `every host uid range for sandboxes is in use (${entries.length} templates on this host, space ${space.start}-${space.end}): kill sandboxes you no longer need so their templates stop, or give forkbox a larger FORKBOX_UID_SPACE.`,
          { ranges: entries.length },
        );
      });
    },

    hold(start, holder) {
      locked((entries) => ({
        entries: entries.map((e) => (e.start === start ? { ...e, ...holder } : e)),
        result: undefined,
      }));
    },

    adopt(start, claim, holder) {
      locked((entries) => {
        const mine = entries.find((e) => e.start === start);
        if (
          mine &&
          (mine.pid !== holder.pid || mine.startTime !== holder.startTime) &&
          mine.stateId !== claim.stateId
        )
          throw new ForkboxError(
            'conflict',
            `host uid range ${start}+${RANGE_SIZE} of template ${claim.template} is registered to another daemon (state dir ${mine.stateDir}): two forkbox daemons share host ids. Give each its own FORKBOX_UID_SPACE.`,
          );
        const rest = entries.filter((e) => e.start !== start);
        return {
          entries: [...rest, { start, ...claim, ...holder, at: mine?.at ?? Date.now() }],
          result: undefined,
        };
      });
    },

    release(start) {
      locked((entries) => ({ entries: entries.filter((e) => e.start !== start), result: undefined }));
    },
  };
}
