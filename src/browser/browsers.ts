/**
 * The daemon's open browsers, one per sandbox at most: started by the first `open` (Chromium in the
 * sandbox, chromium-launch.ts; the daemon's way to it, cdp-bridge.ts; Playwright over CDP,
 * browser-session.ts), used by every later action, gone when it is closed, when its sandbox ends (the
 * connection drops) or when the daemon stops. Actions on one sandbox's browser run one at a time.
 */
import type { Browser } from 'playwright-core';
import type { BrowserAction, BrowserResult, ReplayStep } from '../domain/browser.ts';
import { ForkboxError } from '../domain/errors.ts';
import { BROWSER } from '../domain/limits.ts';
import type { Logger } from '../domain/logger.ts';
import type { BrowserHost, Browsers } from '../service/ports.ts';
import { createKeyedQueue } from '../util/keyed-queue.ts';
import { type BrowserSession, startSession } from './browser-session.ts';
import { type CdpBridge, openCdpBridge } from './cdp-bridge.ts';
import { launchChromium } from './chromium-launch.ts';

interface Open {
  session: BrowserSession;
  bridge: CdpBridge;
  execId: string;
  cancel(): Promise<void>;
}

export interface BrowsersDeps {
  /** Where the bridges' sockets go (a directory only the daemon's user may enter). */
  dir: string;
  log: Pick<Logger, 'info' | 'warn'>;
  /** Playwright's connectOverCDP (a test may wrap it). */
  connect?: (url: string) => Promise<Browser>;
}

async function connectOverCdp(url: string): Promise<Browser> {
  // Loaded on first use: most daemons never open a browser, and Playwright takes a while to import.
  const { chromium } = await import('playwright-core');
  // Chromium refuses DevTools connections whose Host header is not an IP address or localhost.
  return chromium.connectOverCDP(url, { headers: { Host: 'localhost' }, timeout: BROWSER.startMs });
}

export function createBrowsers(deps: BrowsersDeps): Browsers & { has(id: string): boolean } {
  const open = new Map<string, Open>();
  const starting = new Set<string>();
  const queue = createKeyedQueue();
  const connect = deps.connect ?? connectOverCdp;

  async function start(id: string, host: BrowserHost): Promise<Open> {
    if (open.size + starting.size >= BROWSER.perDaemon)
      throw new ForkboxError(
        'resource_exhausted',
        `${BROWSER.perDaemon} browsers are open in this daemon: close one (browser_close) and retry.`,
      );
    starting.add(id);
    const cleanups: (() => Promise<void> | void)[] = [];
    try {
      const launched = await launchChromium(host);
      cleanups.push(() => host.cancel(launched.execId).catch(() => undefined));
      const bridge = await openCdpBridge({
        dir: deps.dir,
        path: launched.path,
        dial: () => host.dial(launched.port),
        onError: (e) => deps.log.warn({ sandbox: id, err: String(e) }, 'browser relay failed'),
      });
      cleanups.push(() => bridge.close());
      const session = await startSession(await connect(bridge.url));
      const entry: Open = {
        session,
        bridge,
        execId: launched.execId,
        cancel: () => host.cancel(launched.execId).catch(() => undefined),
      };
      void session.disconnected.then(() => {
        if (open.get(id) !== entry) return;
        open.delete(id);
        bridge.close();
        void entry.cancel();
      });
      return entry;
    } catch (e) {
      for (const c of cleanups.reverse()) await c();
      throw e;
    } finally {
      starting.delete(id);
    }
  }

  async function close(id: string): Promise<boolean> {
    const entry = open.get(id);
    if (!entry) return false;
    open.delete(id);
    await entry.session.close();
    entry.bridge.close();
    await entry.cancel();
    return true;
  }

  function act(id: string, host: () => BrowserHost, a: BrowserAction): Promise<BrowserResult> {
    return queue.run(id, async () => {
      if (a.action === 'close') {
        const was = await close(id);
        return { url: '', title: '', closed: was };
      }
      let entry = open.get(id);
      let started = false;
      if (!entry) {
        if (a.action !== 'open')
          throw new ForkboxError(
            'not_found',
            'no browser is open in this sandbox: open a page first (browser_open).',
          );
        entry = await start(id, host());
        open.set(id, entry);
        started = true;
      }
      const r = await entry.session.act(a);
      return started ? { ...r, started } : r;
    });
  }

  return {
    act,
    async replay(id: string, host: () => BrowserHost, steps: ReplayStep[]): Promise<void> {
      for (const [i, step] of steps.entries()) {
        let a = step.action;
        if (step.refLine !== undefined) {
          const line = step.refLine;
          const ref = await queue.run(id, async () => open.get(id)?.session.refAt(line));
          if (ref === undefined)
            throw new ForkboxError(
              'conflict',
              `replaying step ${i + 1} (${a.action}): this page has no element where its source's had one; it differs from the source's.`,
            );
          a = { ...a, ref } as BrowserAction;
        }
        await act(id, host, a);
      }
    },
    has: (id: string) => open.has(id),
    history: (id: string) => open.get(id)?.session.replay.steps(),
    async closeAll(): Promise<void> {
      for (const id of [...open.keys()]) await close(id).catch(() => undefined);
    },
  };
}
