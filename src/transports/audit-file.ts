/**
 * The audit log on disk: `<state>/audit.log`, JSON lines (protocol/audit.ts builds them), written by
 * every door of the daemon through this one writer.
 *
 * Bounded: when the file would pass `maxBytes` it is renamed to `audit.log.1` (replacing the previous
 * one) and a new file is started, so the trail takes at most twice `maxBytes` on disk
 * (`FORKBOX_AUDIT_MAX_SIZE` or `forkbox serve --audit-max-size`, default 64 MiB). Lines are appended with
 * one write(2) each on an O_APPEND fd (a line is a few hundred bytes: microseconds), so they are in
 * order and a crash loses none that a response already reflected. Files are created 0600: they name
 * tenants, uids and sandboxes. A failing write is reported to `onError` and the next write retries.
 */
import { closeSync, fstatSync, openSync, readSync, renameSync, writeSync } from 'node:fs';
import { ForkboxError } from '../domain/errors.ts';
import { parseSize } from '../domain/sizes.ts';
import { type AuditLine, type AuditLog, auditLine, matchAudit } from '../protocol/audit.ts';

export const DEFAULT_AUDIT_MAX_BYTES = 64 * 1024 * 1024;
/** Smallest cap accepted: a few lines must fit before rotating. */
export const MIN_AUDIT_MAX_BYTES = 4096;

/** The cap from a flag or FORKBOX_AUDIT_MAX_SIZE (a size such as 64m; a bare number is MiB), else the default. */
export function auditMaxBytes(flag?: string, env = process.env.FORKBOX_AUDIT_MAX_SIZE): number {
  const text = flag ?? (env || undefined);
  if (text === undefined) return DEFAULT_AUDIT_MAX_BYTES;
  const n = parseSize(text);
  if (n < MIN_AUDIT_MAX_BYTES) {
    throw new ForkboxError(
      'invalid_argument',
      `the audit log's size cap must be at least ${MIN_AUDIT_MAX_BYTES} bytes (got '${text}'), e.g. 64m.`,
    );
  }
  return n;
}

/** Bytes at the end of the log read back for `recent` (a few thousand lines). */
export const AUDIT_RECENT_BYTES = 1024 * 1024;

/** The whole lines among the last `bytes` of the file at `path` (oldest first; unreadable ones skipped). */
export function tailLines(path: string, bytes = AUDIT_RECENT_BYTES): AuditLine[] {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return [];
  }
  try {
    const size = fstatSync(fd).size;
    const start = Math.max(0, size - bytes);
    const buf = Buffer.alloc(size - start);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, start + got);
      if (n === 0) break;
      got += n;
    }
    const lines = buf.subarray(0, got).toString('utf8').split('\n');
    if (start > 0) lines.shift(); // cut through the middle of a line
    const out: AuditLine[] = [];
    for (const l of lines) {
      if (!l) continue;
      try {
        out.push(JSON.parse(l) as AuditLine);
      } catch {
        // a line cut by a crash mid-write
      }
    }
    return out;
  } finally {
    closeSync(fd);
  }
}

export interface AuditFileOptions {
  maxBytes?: number;
  onError?: (e: Error) => void;
}

export function createAuditFile(path: string, opts: AuditFileOptions = {}): AuditLog {
  const maxBytes = opts.maxBytes ?? DEFAULT_AUDIT_MAX_BYTES;
  let fd: number | undefined;
  let size = 0;
  const open = (): number => {
    if (fd === undefined) {
      fd = openSync(path, 'a', 0o600);
      size = fstatSync(fd).size;
    }
    return fd;
  };
  const rotate = () => {
    if (fd !== undefined) closeSync(fd);
    fd = undefined;
    renameSync(path, `${path}.1`);
  };
  return {
    write(e) {
      const line = Buffer.from(`${JSON.stringify(auditLine(e))}\n`);
      try {
        open();
        if (size > 0 && size + line.length > maxBytes) rotate();
        size += writeSync(open(), line);
      } catch (err) {
        if (fd !== undefined) {
          try {
            closeSync(fd);
          } catch {}
          fd = undefined;
        }
        opts.onError?.(err as Error);
      }
    },
    recent: (q) => matchAudit(tailLines(path), q),
    async close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}
