/** What the browser does to its page, each step bounded: loads, history moves, screenshots, snapshots. */
import type { Page } from 'playwright-core';
import type { BrowserResult } from '../domain/browser.ts';
import { ForkboxError } from '../domain/errors.ts';
import { BROWSER } from '../domain/limits.ts';
import type { EventLog } from './event-log.ts';

export function timeoutOf(a: { timeoutMs?: number }): number {
  return Math.min(Math.max(a.timeoutMs ?? BROWSER.actionMs, 1), BROWSER.maxActionMs);
}

/** The AI-mode ARIA snapshot, cut at BROWSER.snapshotBytes on a line boundary. */
export function cutSnapshot(full: string): Pick<BrowserResult, 'snapshot' | 'snapshotTruncatedBytes'> {
  const bytes = Buffer.byteLength(full);
  if (bytes <= BROWSER.snapshotBytes) return { snapshot: full };
  const head = Buffer.from(full).subarray(0, BROWSER.snapshotBytes).toString('utf8');
  const kept = head.slice(0, Math.max(0, head.lastIndexOf('\n')));
  const left = bytes - Buffer.byteLength(kept);
  return {
    snapshot: `${kept}\n[… ${left} bytes of the snapshot left out: scroll, or act on what is shown]`,
    snapshotTruncatedBytes: left,
  };
}

export function wireEvents(page: Page, events: EventLog): void {
  page.on('console', (m) => events.add({ type: 'console', level: m.type(), text: m.text() }));
  page.on('pageerror', (e) => events.add({ type: 'pageerror', text: e.message }));
  page.on('request', (r) => events.add({ type: 'request', level: r.method(), url: r.url() }));
  page.on('response', (r) => events.add({ type: 'response', status: r.status(), url: r.url() }));
  page.on('requestfailed', (r) =>
    events.add({ type: 'requestfailed', url: r.url(), text: r.failure()?.errorText ?? 'failed' }),
  );
  page.on('framenavigated', (f) => {
    if (f === page.mainFrame()) events.add({ type: 'navigation', url: f.url() });
  });
}

/** A PNG of the page: the viewport, or the whole page clipped to BROWSER.fullPageMaxHeight; bounded. */
export async function screenshot(
  page: Page,
  fullPage: boolean,
): Promise<NonNullable<BrowserResult['screenshot']>> {
  let clip: { x: number; y: number; width: number; height: number } | undefined;
  if (fullPage) {
    // Run in the page (a string: this daemon's TypeScript has no DOM types).
    const size = (await page.evaluate(
      '({ w: document.documentElement.scrollWidth, h: document.documentElement.scrollHeight })',
    )) as { w: number; h: number };
    clip = {
      x: 0,
      y: 0,
      width: Math.min(size.w, 4 * BROWSER.width),
      height: Math.min(size.h, BROWSER.fullPageMaxHeight),
    };
  }
  const png = await page.screenshot({
    type: 'png',
    fullPage,
    ...(clip ? { clip } : {}),
    timeout: BROWSER.actionMs,
  });
  if (png.length > BROWSER.screenshotBytes)
    throw new ForkboxError(
      'too_large',
      `the screenshot is ${png.length} bytes, over the ${BROWSER.screenshotBytes}-byte bound: take the viewport (fullPage: false).`,
    );
  return { mime: 'image/png', base64: png.toString('base64'), bytes: png.length };
}

/**
 * Back, forward or reload: waits for the navigation to commit, then (briefly) for its load — a page
 * restored from the back-forward cache fires no load event.
 */
export async function history(page: Page, to: 'back' | 'forward' | 'reload'): Promise<void> {
  const o = { timeout: BROWSER.maxActionMs, waitUntil: 'commit' as const };
  if (to === 'back') await page.goBack(o);
  else if (to === 'forward') await page.goForward(o);
  else await page.reload(o);
  await page.waitForLoadState('load', { timeout: BROWSER.actionMs }).catch(() => undefined);
}

/**
 * Load `url`. A load that fails (net::ERR_…) is followed by Chromium's error page, a navigation of its
 * own: it is let settle before the error is reported, so it cannot cut into the next open; and an open
 * cut in by a late navigation all the same is tried once more.
 */
export async function goto(page: Page, url: string): Promise<void> {
  const o = { waitUntil: 'load' as const, timeout: BROWSER.maxActionMs };
  const settle = () => page.waitForLoadState('load', { timeout: BROWSER.actionMs }).catch(() => undefined);
  for (let attempt = 0; ; attempt++) {
    try {
      await page.goto(url, o);
      return;
    } catch (e) {
      const msg = e instanceof Error ? e.message : '';
      if (/net::ERR_/.test(msg)) await settle();
      if (attempt > 0 || !/interrupted by another navigation/.test(msg)) throw e;
      await settle();
    }
  }
}
