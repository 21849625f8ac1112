/**
 * Helpers for integration tests against the real native runtime: a fresh state dir per test file that
 * reuses the default image's layers (built once by `npm run setup` in FORKBOX_STATE_DIR, default
 * /var/lib/forkbox), and a visible skip with the reason when a requirement is missing.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, type TestContext } from 'node:test';
import { type OpenEngineOptions, type OpenedEngine, openEngine } from '../../src/composition.ts';
import type { ImageRecord } from '../../src/domain/types.ts';
import { mountsUnder } from '../../src/runtimes/native/host/mounts.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { which } from '../../src/util/subprocess.ts';

export const MAIN_STATE_DIR = process.env.FORKBOX_STATE_DIR ?? '/var/lib/forkbox';

export function quietLog() {
  const lines: string[] = [];
  const rec = (level: string) => (o: object | string, m?: string) => {
    lines.push(`${level} ${typeof o === 'string' ? o : JSON.stringify(o)} ${m ?? ''}`);
    if (process.env.FORKBOX_TEST_LOG) process.stderr.write(`${lines[lines.length - 1]}\n`);
  };
  return { debug: rec('debug'), info: rec('info'), warn: rec('warn'), error: rec('error'), lines };
}

/** Why the native runtime cannot be tested here, or null when it can. */
export function nativeUnavailable(): string | null {
  if (process.getuid?.() !== 0)
    return 'needs root (the native runtime creates namespaces, mounts and cgroups)';
  try {
    readFileSync(join(MAIN_STATE_DIR, 'images', 'debian.json'));
  } catch {
    return `the default image is not built in ${MAIN_STATE_DIR}: run 'npm run setup' first`;
  }
  return null;
}

/** Why the gvisor runtime cannot be tested here (the native runtime's needs, and runsc), or null. */
export function gvisorUnavailable(): string | null {
  const why = nativeUnavailable();
  if (why) return why;
  if (!process.env.FORKBOX_RUNSC && !which('runsc'))
    return "runsc (gVisor) is not installed: run 'npm run setup' (it installs runsc from Debian's backports)";
  return null;
}

export function defaultImage(): ImageRecord {
  return JSON.parse(readFileSync(join(MAIN_STATE_DIR, 'images', 'debian.json'), 'utf8')) as ImageRecord;
}

/** A new state dir whose image catalog holds the default image (sharing its read-only layers). */
export function makeStateDir(): string {
  mkdirSync('/var/tmp/forkbox-tests', { recursive: true });
  const dir = mkdtempSync('/var/tmp/forkbox-tests/state-');
  mkdirSync(join(dir, 'images'), { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, 'images', 'debian.json'), JSON.stringify(defaultImage()));
  return dir;
}

export interface NativeFixture {
  opened: OpenedEngine;
  stateDir: string;
  log: ReturnType<typeof quietLog>;
  close(): Promise<void>;
}

/**
 * A suite's native fixture with one default sandbox: opened before its tests (handed to `take`), closed
 * after them. Call it inside the suite's describe.
 */
export function withOneSandbox(take: (s: { fx: NativeFixture; api: ForkboxApi; id: string }) => void): void {
  let fx: NativeFixture | undefined;
  before(async () => {
    fx = await openNative();
    const api = fx.opened.api;
    take({ fx, api, id: (await api.createSandbox({})).id });
  });
  after(async () => {
    await fx?.close();
  });
}

/** Open an engine on a fresh state dir; `close` kills everything and checks nothing is left mounted. */
export async function openNative(
  opts: { stateDir?: string } & Pick<
    OpenEngineOptions,
    | 'storage'
    | 'diskDefault'
    | 'diskMax'
    | 'retentionSeconds'
    | 'retentionSweepMs'
    | 'networkCap'
    | 'audit'
    | 'projectRoots'
  > = {},
): Promise<NativeFixture> {
  const stateDir = opts.stateDir ?? makeStateDir();
  const log = quietLog();
  const { stateDir: _, ...rest } = opts;
  const opened = await openEngine({ stateDir, log, reapIntervalMs: 200, ...rest });
  return {
    opened,
    stateDir,
    log,
    async close() {
      await opened.close({ killSandboxes: true });
      const left = mountsUnder(stateDir);
      rmSync(stateDir, { recursive: true, force: true });
      if (left.length > 0) throw new Error(`mounts left under ${stateDir}: ${left.join(', ')}`);
    },
  };
}

/** The first host uid of forkbox's default uid space (runtimes/native/host/uid-ranges.ts). */
export const UID_SPACE_START = 0x40000000;

/** The first host uid of a live sandbox's block (what the native runtime holds for it). */
export function blockBase(fx: NativeFixture, id: string): number {
  const live = (fx.opened.runtime as unknown as { live: Map<string, { block: { base: number } | null }> })
    .live;
  const base = live.get(id)?.block?.base;
  if (typeof base !== 'number') throw new Error(`sandbox ${id} has no uid block`);
  return base;
}

/** Snapshot layers left in a state dir, wherever the storage driver keeps them (copy or btrfs). */
export function snapshotLayers(stateDir: string): string[] {
  const out: string[] = [];
  for (const dir of [join(stateDir, 'layers'), join(stateDir, 'btrfs', 'layers')]) {
    try {
      out.push(...readdirSync(dir).filter((n) => n.startsWith('s-')));
    } catch {
      // this driver's directory does not exist
    }
  }
  return out;
}

/**
 * Mounts the engine keeps under a state dir whatever its sandboxes: the storage driver's (btrfs: the volume
 * and its sandboxes bind) and the inbox tree's tmpfs.
 */
export function storageMounts(stateDir: string): string[] {
  return mountsUnder(stateDir).filter((m) =>
    [join(stateDir, 'btrfs'), join(stateDir, 'sandboxes'), join(stateDir, 'inbox')].includes(m),
  );
}

export function skipUnlessNative(t: TestContext): boolean {
  const why = nativeUnavailable();
  if (why) {
    t.skip(why);
    return true;
  }
  return false;
}

/** The browser image's record (`forkbox images build debian --browser`, built by `npm run setup`). */
export const BROWSER_IMAGE_FILE = join(MAIN_STATE_DIR, 'images', 'debian-browser.json');

/** Why the browser cannot be tested here, or null when it can. */
export function browserUnavailable(): string | null {
  const why = nativeUnavailable();
  if (why) return why;
  try {
    readFileSync(BROWSER_IMAGE_FILE);
  } catch {
    return `the browser image is not built in ${MAIN_STATE_DIR}: run 'npm run setup' (or 'forkbox images build debian --browser')`;
  }
  return null;
}

/** A new state dir holding the default and the browser images (sharing their layers). */
export function makeBrowserStateDir(): string {
  const dir = makeStateDir();
  writeFileSync(join(dir, 'images', 'debian-browser.json'), readFileSync(BROWSER_IMAGE_FILE));
  return dir;
}
