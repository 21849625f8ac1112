/**
 * The daemon's open browsers, one per sandbox at most: started by the first `open` (Chromium in the
 * sandbox, chromium-launch.ts; the daemon's way to it, cdp-bridge.ts; Playwright over CDP,
 * browser-session.ts), used by every later action, gone when it is closed, when its sandbox ends (the
 * connection drops) or when the daemon stops. Actions on one sandbox's browser run one at a time, each
 * within a deadline: a page that hangs its browser (a busy loop, a paused sandbox) loses that browser,
 * not the caller's request or the queue behind it. `close` does not queue: it ends the call in flight.
 */
import type { Browser } from 'playwright-core';
import type { BrowserAction, BrowserResult, ReplayStep } from '../domain/browser.ts';
import { checkBrowserUrl } from '../domain/browser.ts';
import { ForkboxError } from '../domain/errors.ts';
import { BROWSER } from '../domain/limits.ts';
import type { Logger } from '../domain/logger.ts';
import type { BrowserHistory, BrowserHost, Browsers } from '../service/ports.ts';
import { createKeyedQueue } from '../util/keyed-queue.ts';
import { type BrowserSession, startSession } from './browser-session.ts';
import { type CdpBridge, openCdpBridge, sweepSockets } from './cdp-bridge.ts';
import { launchChromium } from './chromium-launch.ts';
import { deadlineAfter, withDeadline } from './deadline.ts';

interface Open {
  tenant: string;
  session: BrowserSession;
  bridge: CdpBridge;
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

/** The most one action may take, start and load included, before its browser is given up. */
const ACTION_DEADLINE_MS = BROWSER.startMs + BROWSER.maxActionMs + 15_000;

export function createBrowsers(deps: BrowsersDeps): Browsers {
  const open = new Map<string, Open>();
  /** Browsers being started: sandbox id → tenant. */
  const starting = new Map<string, string>();
  // A daemon that died left its relay sockets behind: none of them has a browser any more.
  sweepSockets(deps.dir);
  const queue = createKeyedQueue();
  const connect = deps.connect ?? connectOverCdp;
  let closing = false;

  async function start(id: string, host: BrowserHost): Promise<Open> {
    if (closing) throw new ForkboxError('unavailable', 'the daemon is stopping; retry when it is back.');
    if (open.size + starting.size >= BROWSER.perDaemon)
      throw new ForkboxError(
        'resource_exhausted',
        `${BROWSER.perDaemon} browsers are open in this daemon: close one (browser_close) and retry.`,
      );
    const mine =
      [...open.values()].filter((o) => o.tenant === host.tenant).length +
      [...starting.values()].filter((t) => t === host.tenant).length;
    if (mine >= BROWSER.perTenant)
      throw new ForkboxError(
        'resource_exhausted',
        `${BROWSER.perTenant} browsers of yours are open: close one (browser_close) and retry.`,
      );
    starting.set(id, host.tenant);
    const cleanups: (() => Promise<void> | void)[] = [];
    try {
      const launched = await launchChromium(host);
      const cancel = () => host.cancel(launched.execId).catch(() => undefined);
      cleanups.push(cancel);
      const bridge = await openCdpBridge({
        dir: deps.dir,
        path: launched.path,
        dial: () => host.dial(launched.port),
        onError: (e) => deps.log.warn({ sandbox: id, err: String(e) }, 'browser relay failed'),
      });
      cleanups.push(() => bridge.close());
      const browser = await connect(bridge.url);
      cleanups.push(() => browser.close().catch(() => undefined));
      const session = await startSession(browser);
      if (closing) throw new ForkboxError('unavailable', 'the daemon is stopping; retry when it is back.');
      const entry: Open = { tenant: host.tenant, session, bridge, cancel };
      open.set(id, entry);
      void session.disconnected.then(() => {
        if (open.get(id) === entry) void drop(id);
      });
      return entry;
    } catch (e) {
      for (const c of cleanups.reverse()) await c();
      throw e;
    } finally {
      starting.delete(id);
    }
  }

  /** Forget a sandbox's browser and end it: Playwright's connection, the relay, Chromium. */
  async function drop(id: string): Promise<boolean> {
    const entry = open.get(id);
    if (!entry) return false;
    open.delete(id);
    await withDeadline(entry.session.close(), 5000).catch(() => undefined);
    entry.bridge.close();
    await entry.cancel();
    return true;
  }

  async function run(id: string, host: () => BrowserHost, a: BrowserAction): Promise<BrowserResult> {
    let entry = open.get(id);
    let started = false;
    if (!entry) {
      if (a.action !== 'open')
        throw new ForkboxError(
          'not_found',
          'no browser is open in this sandbox: open a page first (browser_open).',
        );
      checkBrowserUrl(a.url); // before Chromium starts for nothing
      entry = await start(id, host());
      started = true;
    }
    const r = await entry.session.act(a);
    return started ? { ...r, started } : r;
  }

  function act(id: string, host: () => BrowserHost, a: BrowserAction): Promise<BrowserResult> {
    if (a.action === 'close') return drop(id).then((was) => ({ url: '', title: '', closed: was }));
    return queue.run(id, () =>
      withDeadline(run(id, host, a), ACTION_DEADLINE_MS).catch(async (e: unknown) => {
        if (!(e instanceof ForkboxError && e.code === 'timeout' && e.message.startsWith('deadline'))) throw e;
        await drop(id);
        throw new ForkboxError(
          'timeout',
          `${a.action}: the browser did not answer in ${ACTION_DEADLINE_MS / 1000} s (a page busy in a loop, or the sandbox paused); it was closed: open the page again.`,
        );
      }),
    );
  }

  return {
    act,
    async replay(id: string, host: () => BrowserHost, steps: ReplayStep[]): Promise<void> {
      const deadline = deadlineAfter(BROWSER.replayMs);
      for (const [i, step] of steps.entries()) {
        if (deadline.passed())
          throw new ForkboxError(
            'timeout',
            `the replay took over ${BROWSER.replayMs / 1000} s: ${steps.length - i} of ${steps.length} steps not replayed.`,
          );
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
    history: (id: string): BrowserHistory | undefined => open.get(id)?.session.replay.history(),
    async closeAll(): Promise<void> {
      closing = true;
      for (const id of [...open.keys()]) await drop(id).catch(() => undefined);
    },
  };
}
