/**
 * libc through koffi (FFI), for the system calls Node does not expose: the one loaded handle, and the
 * error every wrapped call throws. koffi saves errno right after each foreign call, so `koffi.errno()`
 * read immediately afterwards is the call's own errno.
 */
import koffi from 'koffi';

let handle: ReturnType<typeof koffi.load> | undefined;

/** libc.so.6, loaded on first use (once per process). */
export function libc(): ReturnType<typeof koffi.load> {
  handle ??= koffi.load('libc.so.6');
  return handle;
}

/** A libc function bound through koffi: C arguments in, its int or long result out. */
export type LibcFn = (...args: unknown[]) => number;

/**
 * Bind libc functions by their C prototypes, on first use: returns a getter of `name → bound function`.
 * Pointers to structs go through raw Buffers (`void *`) rather than registered koffi types: koffi's type
 * names are process-wide, so a second binding of a named struct would collide.
 */
export function bindLibc<K extends string>(prototypes: Record<K, string>): () => Record<K, LibcFn> {
  let bound: Record<K, LibcFn> | undefined;
  return () => {
    if (bound) return bound;
    const lib = libc();
    const out = {} as Record<K, LibcFn>;
    for (const name of Object.keys(prototypes) as K[]) out[name] = lib.func(prototypes[name]) as LibcFn;
    bound = out;
    return bound;
  };
}

const ERRNO_NAMES: ReadonlyMap<number, string> = (() => {
  const m = new Map<number, string>();
  // First name wins: koffi's table is alphabetical, so aliases (EDEADLOCK, EWOULDBLOCK, ENOTSUP) lose to the
  // names strerror uses unless listed first here.
  for (const preferred of ['EAGAIN', 'EDEADLK', 'EOPNOTSUPP']) {
    const n = koffi.os.errno[preferred];
    if (n !== undefined) m.set(n, preferred);
  }
  for (const [name, n] of Object.entries(koffi.os.errno)) if (!m.has(n)) m.set(n, name);
  return m;
})();

export function errnoName(errno: number): string {
  return ERRNO_NAMES.get(errno) ?? `E${errno}`;
}

/** A failed host syscall. `code` is the symbolic errno name, like Node's own system errors. */
export class SysError extends Error {
  readonly errno: number;
  readonly code: string;
  readonly syscall: string;
  constructor(syscall: string, errno: number, detail: string) {
    const code = errnoName(errno);
    super(`${syscall}(${detail}) failed: ${code} (errno ${errno})`);
    this.name = 'SysError';
    this.errno = errno;
    this.code = code;
    this.syscall = syscall;
  }
}
