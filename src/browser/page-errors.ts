/** Playwright's errors as the catalog's, with what to do next. */
import type { BrowserAction } from '../domain/browser.ts';
import { ForkboxError } from '../domain/errors.ts';

export function pageError(e: unknown, a: BrowserAction): ForkboxError {
  if (e instanceof ForkboxError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  const first = msg.split('\n')[0]?.slice(0, 500) ?? '';
  if (e instanceof Error && e.name === 'TimeoutError') {
    const what = 'ref' in a && a.ref !== undefined ? `element ${a.ref}` : 'the page';
    return new ForkboxError(
      'timeout',
      `${a.action}: ${what} did not get there in time (${first}). Take a new snapshot: refs change when the page does.`,
    );
  }
  if (/net::ERR_/.test(msg))
    return new ForkboxError(
      'unavailable',
      `${a.action}: the page could not be loaded (${first}). The sandbox's network policy applies to its browser.`,
    );
  if (
    /Target page, context or browser has been closed|Browser has been closed|browser has disconnected/i.test(
      msg,
    )
  )
    return new ForkboxError('unavailable', `the browser is gone (${first}): open the page again.`);
  return new ForkboxError('invalid_argument', `${a.action}: ${first}`);
}
