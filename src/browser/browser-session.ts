/**
 * One open browser: Playwright connected over CDP (through the sandbox's relay, cdp-bridge.ts) to the
 * Chromium in a sandbox, its page, its event log, and the actions an agent takes on it by ref
 * (Playwright's `aria-ref=` selector on the refs of its AI-mode ARIA snapshot).
 */
import type { Browser } from 'playwright-core';
import type { BrowserAction, BrowserResult } from '../domain/browser.ts';
import { checkBrowserUrl, selectorOf } from '../domain/browser.ts';
import { ForkboxError } from '../domain/errors.ts';
import { BROWSER } from '../domain/limits.ts';
import { createEventLog, type EventLog } from './event-log.ts';
import { pageError } from './page-errors.ts';
import { cutSnapshot, goto, history, screenshot, timeoutOf, wireEvents } from './page-ops.ts';
import { createReplayLog, lineOfRef, type ReplayLog, refOnLine } from './replay-log.ts';

export interface BrowserSession {
  readonly events: EventLog;
  /** The page's last open and the actions since, for a fork's children. */
  readonly replay: ReplayLog;
  /** The ref on `line` of a new snapshot of the page (a replayed step's element). */
  refAt(line: number): Promise<string | undefined>;
  act(a: BrowserAction): Promise<BrowserResult>;
  /** Ends when the connection to the browser does (the sandbox ended, or Chromium died). */
  readonly disconnected: Promise<void>;
  close(): Promise<void>;
}

export async function startSession(browser: Browser): Promise<BrowserSession> {
  const context = browser.contexts()[0] ?? (await browser.newContext());
  const page = context.pages()[0] ?? (await context.newPage());
  await page.setViewportSize({ width: BROWSER.width, height: BROWSER.height });
  const events = createEventLog();
  wireEvents(page, events);
  const disconnected = new Promise<void>((resolve) => browser.once('disconnected', () => resolve()));
  const at = (t: { ref?: string | undefined; selector?: string | undefined }) =>
    page.locator(selectorOf(t)).first();

  const replay = createReplayLog();
  /** The latest snapshot taken, whole: where the refs an agent acts on come from. */
  let lastSnapshot = '';
  async function snapshot(): Promise<string> {
    lastSnapshot = await page.ariaSnapshot({ mode: 'ai', timeout: BROWSER.actionMs });
    return lastSnapshot;
  }

  async function state(withSnapshot: boolean): Promise<BrowserResult> {
    const out: BrowserResult = { url: page.url(), title: await page.title().catch(() => '') };
    return withSnapshot ? { ...out, ...cutSnapshot(await snapshot()) } : out;
  }

  /** The snapshot line of an action's ref (a new snapshot when the last one does not name it). */
  async function refLineOf(a: BrowserAction): Promise<number | undefined> {
    if (!('ref' in a) || a.ref === undefined) return undefined;
    return lineOfRef(lastSnapshot, a.ref) ?? lineOfRef(await snapshot().catch(() => ''), a.ref);
  }

  async function act(a: BrowserAction): Promise<BrowserResult> {
    switch (a.action) {
      case 'open':
        await goto(page, checkBrowserUrl(a.url));
        return state(true);
      case 'snapshot':
        return state(true);
      case 'click':
        await at(a).click({ timeout: BROWSER.actionMs });
        return state(true);
      case 'fill':
        if (Buffer.byteLength(a.value) > BROWSER.fillBytes)
          throw new ForkboxError('too_large', `the value is over ${BROWSER.fillBytes} bytes.`);
        await at(a).fill(a.value, { timeout: BROWSER.actionMs });
        return state(true);
      case 'select':
        await at(a).selectOption(a.values, { timeout: BROWSER.actionMs });
        return state(true);
      case 'press':
        if (!/^[\w+\- ]{1,64}$/.test(a.key) && a.key.length !== 1)
          throw new ForkboxError(
            'invalid_argument',
            `'${a.key.slice(0, 64)}' is not a key name (e.g. Enter, Control+A, a).`,
          );
        if (a.ref !== undefined) await at({ ref: a.ref }).press(a.key, { timeout: BROWSER.actionMs });
        else await page.keyboard.press(a.key);
        return state(true);
      case 'scroll':
        if (a.ref !== undefined)
          await at({ ref: a.ref }).scrollIntoViewIfNeeded({ timeout: BROWSER.actionMs });
        else await page.mouse.wheel(0, a.dy ?? BROWSER.height);
        return state(true);
      case 'wait_for':
        if (a.ref !== undefined)
          await at({ ref: a.ref }).waitFor({ state: 'visible', timeout: timeoutOf(a) });
        else if (a.text !== undefined)
          await page
            .getByText(a.text)
            .first()
            .waitFor({ timeout: timeoutOf(a) });
        else throw new ForkboxError('invalid_argument', 'wait for what: give ref or text.');
        return state(true);
      case 'screenshot':
        return { ...(await state(false)), screenshot: await screenshot(page, a.fullPage === true) };
      case 'navigate':
        await history(page, a.to);
        return state(true);
      case 'events': {
        const r = events.since(a.since ?? 0, a.limit ?? 100);
        return { ...(await state(false)), ...r };
      }
      case 'close':
        throw new ForkboxError('internal', 'close is the manager’s');
    }
  }

  return {
    events,
    replay,
    disconnected,
    refAt: async (line) => refOnLine(await snapshot(), line),
    async act(a) {
      try {
        const line = await refLineOf(a);
        const r = await act(a);
        replay.record(a, line);
        return r;
      } catch (e) {
        throw pageError(e, a);
      }
    },
    async close() {
      await browser.close().catch(() => undefined);
    },
  };
}
