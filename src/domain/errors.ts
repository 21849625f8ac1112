/**
 * The one error catalog. Every error forkbox returns has a code from here; each surface (CLI exit codes,
 * REST status, MCP isError results) maps codes in exactly one place. Messages say what to do next.
 */
export const ERROR_CODES = {
  invalid_argument: { http: 400, exit: 2 },
  not_found: { http: 404, exit: 3 },
  already_exists: { http: 409, exit: 4 },
  conflict: { http: 409, exit: 4 },
  busy: { http: 409, exit: 4 },
  too_large: { http: 413, exit: 5 },
  resource_exhausted: { http: 429, exit: 6 },
  unavailable: { http: 503, exit: 7 },
  timeout: { http: 504, exit: 8 },
  permission_denied: { http: 403, exit: 9 },
  unauthenticated: { http: 401, exit: 9 },
  requirement_missing: { http: 503, exit: 10 },
  sandbox_gone: { http: 410, exit: 11 },
  agent_protocol: { http: 502, exit: 12 },
  internal: { http: 500, exit: 1 },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class ForkboxError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    details?: Record<string, unknown>,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ForkboxError';
    this.code = code;
    this.details = details;
  }

  toJSON(): { code: ErrorCode; message: string; details?: Record<string, unknown> } {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }
}

export function isForkboxError(e: unknown): e is ForkboxError {
  return e instanceof ForkboxError;
}

/**
 * Operational failures the host reports through an errno: not forkbox bugs but conditions the caller or
 * the host's operator can act on. Each maps to a catalog code and says what to do next.
 */
const HOST_ERRNOS: Record<string, { code: ErrorCode; advice: string }> = {
  ENOSPC: {
    code: 'resource_exhausted',
    advice: 'the host is out of disk space: free space in the state dir',
  },
  EDQUOT: { code: 'resource_exhausted', advice: 'a disk quota is exhausted: free space or raise the quota' },
  ENOMEM: { code: 'resource_exhausted', advice: 'the host is out of memory: kill idle sandboxes and retry' },
  EAGAIN: {
    code: 'resource_exhausted',
    advice: 'a host limit was hit (processes, threads or locked memory): kill idle sandboxes and retry',
  },
  EMFILE: {
    code: 'resource_exhausted',
    advice: "forkbox's open-file limit was hit: raise 'ulimit -n' and retry",
  },
  ENFILE: {
    code: 'resource_exhausted',
    advice: "the host's open-file limit was hit: raise fs.file-max and retry",
  },
  EBUSY: { code: 'busy', advice: 'something on the host still uses it (a mount or a process): retry later' },
  EACCES: { code: 'permission_denied', advice: "check the path's owner and mode, or run the daemon as root" },
  EPERM: { code: 'permission_denied', advice: 'the operation needs privileges: run the daemon as root' },
};

/**
 * Wrap anything thrown into a ForkboxError, keeping the original as the cause. A host errno from the
 * table above becomes its catalog code with advice; anything else is an invariant violation, reported
 * as a forkbox bug.
 */
export function toForkboxError(e: unknown): ForkboxError {
  if (e instanceof ForkboxError) return e;
  const message = e instanceof Error ? e.message : String(e);
  const errno = (e as { code?: unknown } | null)?.code;
  const host = typeof errno === 'string' ? HOST_ERRNOS[errno] : undefined;
  if (host) return new ForkboxError(host.code, `${message}: ${host.advice}.`, { errno }, { cause: e });
  return new ForkboxError(
    'internal',
    `internal error: ${message}. This is a forkbox bug; please report it.`,
    undefined,
    {
      cause: e,
    },
  );
}

export const errors = {
  sandboxNotFound: (id: string) =>
    new ForkboxError('not_found', `no sandbox '${id}'. List sandboxes with 'forkbox ls'.`, { sandbox: id }),
  imageNotFound: (name: string) =>
    new ForkboxError(
      'not_found',
      `no image '${name}'. List images with 'forkbox images ls', or build the default one with 'forkbox images build debian'.`,
      { image: name },
    ),
  sandboxNotRunning: (id: string, state: string) =>
    new ForkboxError(
      'conflict',
      `sandbox '${id}' is ${state}, not running.${state === 'paused' ? ` Resume it with 'forkbox resume ${id}'.` : " Create a new one with 'forkbox create'."}`,
      { sandbox: id, state },
    ),
  invalid: (message: string, details?: Record<string, unknown>) =>
    new ForkboxError('invalid_argument', message, details),
};
