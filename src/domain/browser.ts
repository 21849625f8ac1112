/**
 * What an agent asks of the browser in a sandbox, and what it gets back (src/browser/, docs/BROWSER.md).
 * Elements are named by the refs of the last accessibility snapshot (`e12`; `f1e3` inside a frame), which
 * stay valid until the page changes.
 */

import { ForkboxError } from './errors.ts';
import { BROWSER } from './limits.ts';

export type BrowserAction =
  /** Start the sandbox's browser if needed and load `url` (http(s), file:// inside the sandbox, about:blank). */
  | { action: 'open'; url: string }
  | { action: 'snapshot' }
  /** By `ref`, or (agentkernel's fallback) by a CSS `selector`. */
  | ({ action: 'click' } & Target)
  | ({ action: 'fill'; value: string } & Target)
  | { action: 'select'; ref: string; values: string[] }
  /** A key (`Enter`, `Control+A`, `a`) to the element `ref`, or to the page's focused element. */
  | { action: 'press'; key: string; ref?: string }
  /** Bring `ref` into view, or scroll the page by `dy` pixels (default one viewport down). */
  | { action: 'scroll'; ref?: string; dy?: number }
  /** Wait until `ref` is visible or `text` appears on the page, at most `timeoutMs`. */
  | { action: 'wait_for'; ref?: string; text?: string; timeoutMs?: number }
  | { action: 'screenshot'; fullPage?: boolean }
  | { action: 'navigate'; to: 'back' | 'forward' | 'reload' }
  /** Console messages, page errors, requests and navigations after `since` (a cursor from a result). */
  | { action: 'events'; since?: number; limit?: number }
  | { action: 'close' };

/** An element: by ref from the latest snapshot, or by CSS selector (the first match). */
export type Target = { ref: string; selector?: undefined } | { selector: string; ref?: undefined };

export type BrowserActionName = BrowserAction['action'];

/** One step of a page's history, as a fork's children replay it (src/browser/replay-log.ts). */
export interface ReplayStep {
  action: BrowserAction;
  /** The action's ref was on this line of the snapshot it came from: a child acts on the ref there. */
  refLine?: number;
}

export interface BrowserEvent {
  /** Its place in the browser's event log: pass the last one seen as `since`. */
  seq: number;
  at: number;
  type: 'console' | 'pageerror' | 'request' | 'response' | 'requestfailed' | 'navigation';
  /** console: log, error, warning…; request/response: the method. */
  level?: string;
  text?: string;
  url?: string;
  status?: number;
}

export interface BrowserResult {
  /** The page's URL and title after the action (empty once closed). */
  url: string;
  title: string;
  /** The accessibility snapshot after the action, with refs (not for events, screenshot, close). */
  snapshot?: string;
  /** Bytes of the snapshot left out past the bound. */
  snapshotTruncatedBytes?: number;
  /** A PNG of the page (screenshot). */
  screenshot?: { mime: 'image/png'; base64: string; bytes: number };
  events?: BrowserEvent[];
  /** The cursor for the next `events` call, and events dropped (the log keeps the newest). */
  next?: number;
  dropped?: number;
  /** open: whether this call started the browser. */
  started?: boolean;
  closed?: boolean;
}

const REF_RE = /^(f\d{1,4})?e\d{1,7}$/;

export function checkRef(ref: unknown): string {
  if (typeof ref !== 'string' || !REF_RE.test(ref))
    throw new ForkboxError(
      'invalid_argument',
      `'${String(ref).slice(0, 40)}' is not an element ref: use one from the latest browser snapshot (e.g. e12).`,
    );
  return ref;
}

/** Playwright's selector for a target (refs through its `aria-ref=` engine). */
export function selectorOf(t: { ref?: string | undefined; selector?: string | undefined }): string {
  if (t.ref !== undefined && t.selector === undefined) return `aria-ref=${checkRef(t.ref)}`;
  if (t.selector !== undefined && t.ref === undefined) {
    if (t.selector.length === 0 || t.selector.length > 1024)
      throw new ForkboxError('invalid_argument', 'a CSS selector is 1 to 1024 characters.');
    return `css=${t.selector}`;
  }
  throw new ForkboxError(
    'invalid_argument',
    'name the element by ref (from the latest snapshot) or by selector, one of them.',
  );
}

/** A URL the sandbox's browser may be sent to: http(s) (its network policy applies), file:, about:blank. */
export function checkBrowserUrl(url: string): string {
  if (Buffer.byteLength(url) > BROWSER.urlBytes)
    throw new ForkboxError('too_large', `the URL is over ${BROWSER.urlBytes} bytes.`);
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ForkboxError(
      'invalid_argument',
      `'${url.slice(0, 80)}' is not a URL: give one with its scheme, e.g. http://localhost:8000/.`,
    );
  }
  if (!['http:', 'https:', 'file:'].includes(u.protocol) && u.href !== 'about:blank')
    throw new ForkboxError(
      'invalid_argument',
      `the browser opens http, https and file URLs (and about:blank), not ${u.protocol}`,
    );
  return u.href;
}
