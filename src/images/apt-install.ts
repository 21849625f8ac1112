/**
 * A second stage after debootstrap: packages installed by apt inside the new root filesystem. debootstrap
 * resolves and configures a large `--include` set poorly (with Chromium's desktop dependencies, bookworm's
 * `dconf-service` failed to configure five times here); apt orders and configures them properly. The
 * root is the build's own directory (not yet an image); package scripts run chrooted there with /proc
 * mounted and services kept from starting (policy-rc.d), as debootstrap runs them.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ForkboxError } from '../domain/errors.ts';
import type { Logger } from '../domain/logger.ts';
import type { ProgressEvent } from '../service/api.ts';
import { run } from '../util/subprocess.ts';

/** The browser variant's default name (`forkbox images build debian --browser`). */
export const BROWSER_IMAGE = 'debian-browser';

/** The browser image's packages on top of the default set: Debian's Chromium and a font family. */
export const BROWSER_PACKAGES: readonly string[] = ['chromium', 'fonts-liberation'];

export async function aptInstall(opts: {
  target: string;
  packages: readonly string[];
  onProgress?: (e: ProgressEvent) => void;
  signal?: AbortSignal;
  log?: Pick<Logger, 'info'>;
}): Promise<void> {
  if (opts.packages.length === 0) return;
  const emit = opts.onProgress ?? (() => {});
  const proc = join(opts.target, 'proc');
  const policy = join(opts.target, 'usr/sbin/policy-rc.d');
  mkdirSync(proc, { recursive: true });
  writeFileSync(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 });
  let mounted = false;
  const tail: string[] = [];
  const inRoot = (args: string[]) =>
    run('chroot', [opts.target, '/usr/bin/env', 'DEBIAN_FRONTEND=noninteractive', ...args], {
      captureStdout: false,
      onLine: (line) => {
        tail.push(line);
        if (tail.length > 30) tail.shift();
        opts.log?.info({ line }, 'apt-get');
        const m = /^(Get|Unpacking|Setting up) (\S+)/.exec(line);
        if (m) emit({ phase: m[1] === 'Get' ? 'downloading' : 'installing', message: line.slice(0, 200) });
      },
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  // debootstrap left a placeholder resolv.conf (an image carries none of the host's): apt needs the
  // host's resolvers while it runs, then the placeholder is put back.
  const resolv = join(opts.target, 'etc/resolv.conf');
  const placeholder = readFileSync(resolv, 'utf8');
  replaceFile(resolv, readFileSync('/etc/resolv.conf', 'utf8'));
  try {
    const m = await run('mount', ['-t', 'proc', 'proc', proc]);
    mounted = m.code === 0;
    emit({ phase: 'installing', message: `apt-get install ${opts.packages.join(' ')}` });
    for (const args of [
      ['apt-get', 'update', '-q'],
      ['apt-get', 'install', '-y', '-q', '--no-install-recommends', ...opts.packages],
      ['apt-get', 'clean'],
    ]) {
      const r = await inRoot(args);
      if (opts.signal?.aborted) throw new ForkboxError('conflict', 'image build cancelled.');
      if (r.code !== 0)
        throw new ForkboxError(
          'unavailable',
          `${args.slice(0, 2).join(' ')} in the new image failed (exit ${r.code ?? r.signal}). Last output:\n${tail.join('\n')}`,
        );
    }
  } finally {
    if (mounted) await run('umount', ['-l', proc]);
    rmSync(policy, { force: true });
    replaceFile(resolv, placeholder);
    // The package lists apt fetched are tens of MB nobody in a sandbox needs (as after debootstrap).
    const lists = join(opts.target, 'var/lib/apt/lists');
    for (const n of readdirSync(lists))
      if (n !== 'partial' && n !== 'lock') rmSync(join(lists, n), { force: true, recursive: true });
  }
}

/** Replace a file inside the target without following a symlink there (which would write to the host). */
function replaceFile(path: string, text: string): void {
  rmSync(path, { force: true });
  writeFileSync(path, text, { flag: 'wx', mode: 0o644 });
}
