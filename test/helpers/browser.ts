/**
 * Headless Chromium for browser tests: Debian's `chromium` (installed by scripts/setup.sh) driven by
 * playwright-core, which never downloads a browser of its own. A missing browser is a clear failure,
 * not a skip.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM_PATH = process.env.FORKBOX_CHROMIUM ?? '/usr/bin/chromium';

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `no Chromium at ${CHROMIUM_PATH}: run 'npm run setup' (it installs Debian's chromium package), or set FORKBOX_CHROMIUM to a Chromium binary.`,
    );
  }
  // --no-sandbox: the tests run as root, where Chromium's own sandbox cannot start.
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ['--no-sandbox'] });
}

/** Where a test saves screenshots (CI keeps it as an artifact): FORKBOX_TEST_OUTPUT or test-output/. */
export function testOutputDir(name: string): string {
  const root = process.env.FORKBOX_TEST_OUTPUT ?? join(import.meta.dirname, '..', '..', 'test-output');
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}
