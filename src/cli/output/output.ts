/**
 * What the CLI prints: human tables or `--json` on stdout, notes and errors on stderr, and the one mapping
 * from errors to exit codes.
 */
import { CommanderError } from 'commander';
import { ERROR_CODES, toForkboxError } from '../../domain/errors.ts';

/** The exit code for anything thrown by a command (the catalog's `exit`; usage errors are 2). */
export function exitCodeFor(e: unknown): number {
  if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : ERROR_CODES.invalid_argument.exit;
  return ERROR_CODES[toForkboxError(e).code].exit;
}

export interface Output {
  readonly json: boolean;
  /** Print a result: JSON when --json, else the human rendering. */
  result(data: unknown, human: () => string): void;
  /** A line on stderr prefixed with `forkbox: `. */
  note(message: string): void;
  /** Print an error on stderr and return the exit code for it. */
  error(e: unknown): number;
}

export interface OutputStreams {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
}

export function createOutput(json: boolean, io: OutputStreams = process): Output {
  return {
    json,
    result(data, human) {
      if (json) io.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
      else {
        const text = human();
        if (text !== '') io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
      }
    },
    note(message) {
      io.stderr.write(`forkbox: ${message}\n`);
    },
    error(e) {
      // Commander already printed its own usage message.
      if (!(e instanceof CommanderError)) {
        const err = toForkboxError(e);
        if (json) io.stderr.write(`${JSON.stringify({ error: err.toJSON() })}\n`);
        else io.stderr.write(`forkbox: ${err.message}\n`);
      }
      return exitCodeFor(e);
    },
  };
}

/** A plain left-aligned table with a header row. */
export function table(headers: string[], rows: string[][]): string {
  // A reduce, not Math.max(...): a spread of 300,000 rows overflows the call stack.
  const widths = headers.map((h, i) => rows.reduce((w, r) => Math.max(w, (r[i] ?? '').length), h.length));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

export { formatBytes } from '../../domain/sizes.ts';

/** "3m ago" / "in 2h" relative to now; '-' for none. */
export function formatRelative(when: string | number | null, now = Date.now()): string {
  if (when === null) return '-';
  const t = typeof when === 'number' ? when : Date.parse(when);
  if (Number.isNaN(t)) return String(when);
  const d = Math.round((t - now) / 1000);
  const a = Math.abs(d);
  const s =
    a < 60
      ? `${a}s`
      : a < 3600
        ? `${Math.floor(a / 60)}m`
        : a < 86400
          ? `${Math.floor(a / 3600)}h`
          : `${Math.floor(a / 86400)}d`;
  return d < 0 ? `${s} ago` : `in ${s}`;
}
