/**
 * Starting Chromium inside a sandbox: a background exec of Debian's Chromium, headless, with its own
 * profile in the sandbox and its DevTools port on the sandbox's loopback (port 0: Chromium picks one and
 * writes it to `DevToolsActivePort` in the profile, which the daemon reads through the agent). It runs
 * under the sandbox's limits and network policy like any command. Its flags are explained in
 * docs/SECURITY.md, "The browser".
 */
import { randomBytes } from 'node:crypto';
import { ForkboxError } from '../domain/errors.ts';
import { BROWSER, EGRESS } from '../domain/limits.ts';
import type { NetworkPolicy } from '../domain/network.ts';
import type { BrowserHost } from '../service/ports.ts';
import { deadlineAfter } from './deadline.ts';

/** The binary itself, not Debian's wrapper script (which only adds flags from /etc/chromium.d). */
export const CHROMIUM = '/usr/lib/chromium/chromium';
/** Profiles live here inside the sandbox, one per start. */
export const PROFILES = '/tmp/.forkbox-browser';

/** What launching needs of the sandbox, through the engine's API for the caller. */
export type LaunchHost = Omit<BrowserHost, 'dial'>;

export interface Launched {
  execId: string;
  port: number;
  /** The browser's DevTools WebSocket path (`/devtools/browser/<id>`). */
  path: string;
  profile: string;
}

export function chromiumArgv(profile: string, network: NetworkPolicy): string[] {
  return [
    CHROMIUM,
    '--headless',
    // Chromium's own sandbox needs to make user namespaces, which the sandbox's seccomp profile refuses
    // to all its code; the sandbox is the boundary (docs/SECURITY.md, "The browser").
    '--no-sandbox',
    '--disable-gpu',
    // /dev/shm in a sandbox is small (a share of its memory limit): shared memory goes to /tmp instead.
    '--disable-dev-shm-usage',
    '--no-first-run',
    '--no-default-browser-check',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-breakpad',
    '--mute-audio',
    // Back and forward load the page again (and fire its load event, which actions wait for) instead of
    // restoring it from the back-forward cache, where Playwright saw no load and waited out its timeout.
    '--disable-features=BackForwardCache',
    `--user-data-dir=${profile}`,
    '--remote-debugging-address=127.0.0.1',
    '--remote-debugging-port=0',
    `--window-size=${BROWSER.width},${BROWSER.height}`,
    // `allow`: everything off the sandbox goes through its egress proxy (the agent's relay on loopback).
    ...(network.mode === 'allow' ? [`--proxy-server=http://127.0.0.1:${EGRESS.relayPort}`] : []),
    'about:blank',
  ];
}

/** Parse `DevToolsActivePort`: the port, then the browser's WebSocket path. */
export function parseActivePort(text: string): { port: number; path: string } | null {
  const [port, path] = text.trim().split('\n');
  const n = Number(port);
  if (!Number.isInteger(n) || n < 1 || n > 65535 || !path || !/^\/devtools\/browser\/[\w-]+$/.test(path))
    return null;
  return { port: n, path };
}

export async function launchChromium(host: LaunchHost): Promise<Launched> {
  if (!(await host.exists(CHROMIUM)))
    throw new ForkboxError(
      'requirement_missing',
      "this sandbox's image has no Chromium: create the sandbox from the browser image ('forkbox images build debian --browser', then image 'debian-browser').",
    );
  const profile = `${PROFILES}/${randomBytes(6).toString('hex')}`;
  const execId = await host.start(chromiumArgv(profile, host.network));
  const deadline = deadlineAfter(BROWSER.startMs);
  try {
    for (;;) {
      const text = await host.read(`${profile}/DevToolsActivePort`);
      const found = text === null ? null : parseActivePort(text);
      if (found) return { execId, profile, ...found };
      const said = await host.ended(execId);
      if (said !== null)
        throw new ForkboxError(
          'unavailable',
          `Chromium exited while starting: ${said.slice(-1000) || '(no output)'}`,
        );
      if (deadline.passed())
        throw new ForkboxError(
          'timeout',
          `Chromium did not open its DevTools port within ${BROWSER.startMs / 1000} s (a sandbox with more memory or CPU may help).`,
        );
      await deadline.sleep(100);
    }
  } catch (e) {
    await host.cancel(execId).catch(() => undefined);
    throw e;
  }
}
