/**
 * The one place where errors become HTTP responses (and HTTP error bodies become errors again).
 * Every code's status comes from the catalog in domain/errors.ts, never from ad-hoc numbers in routes.
 */
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ERROR_CODES, type ErrorCode, ForkboxError, toForkboxError } from '../../domain/errors.ts';

export interface ErrorBody {
  error: { code: ErrorCode; message: string; details?: Record<string, unknown> };
}

/** Map anything thrown to the HTTP status and JSON body the API returns for it. */
export function toHttpError(e: unknown): { status: ContentfulStatusCode; body: ErrorBody } {
  const err = toForkboxError(e);
  return { status: ERROR_CODES[err.code].http as ContentfulStatusCode, body: { error: err.toJSON() } };
}

function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);
}

/**
 * Rebuild a ForkboxError from an error body (the inverse of toHttpError), so a client of the daemon
 * sees the same code and message the engine threw. Anything unrecognisable becomes `internal`, or
 * `unavailable` for a gateway-style status.
 */
export function fromErrorBody(status: number, body: unknown): ForkboxError {
  const e = (body as { error?: unknown } | null)?.error as
    | { code?: unknown; message?: unknown; details?: unknown }
    | undefined;
  if (e && isErrorCode(e.code) && typeof e.message === 'string') {
    const details =
      e.details && typeof e.details === 'object' && !Array.isArray(e.details)
        ? (e.details as Record<string, unknown>)
        : undefined;
    return new ForkboxError(e.code, e.message, details);
  }
  const code: ErrorCode = status === 502 || status === 503 || status === 504 ? 'unavailable' : 'internal';
  return new ForkboxError(code, `the forkbox daemon answered HTTP ${status} without a forkbox error body.`, {
    status,
  });
}
