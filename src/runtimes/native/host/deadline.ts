import { ForkboxError } from '../../../domain/errors.ts';

/** Resolve when `fn` is called, reject after `ms` with a clear timeout error. */
export function deadline<T>(
  ms: number,
  what: string,
  start: (resolve: (v: T) => void, reject: (e: unknown) => void) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(
      () =>
        reject(
          new ForkboxError(
            'timeout',
            `${what} did not happen within ${ms} ms. Check 'forkbox doctor' and the daemon log.`,
          ),
        ),
      ms,
    );
    start(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}
