/** Building a Debian rootfs with debootstrap, with its output turned into progress events. */
import { readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ForkboxError } from '../domain/errors.ts';
import type { Logger } from '../domain/logger.ts';
import type { ProgressEvent } from '../service/api.ts';
import { run } from '../util/subprocess.ts';

/**
 * The default image: Debian minbase plus what the agent and typical agent work need — pip for installs
 * from an allowed index, Python's usual data stack (numpy, pandas, matplotlib) and Node.js, all Debian's
 * own packages, so examples written for the systems forkbox replaces run as documented.
 */
export const DEFAULT_PACKAGES: readonly string[] = [
  'python3',
  'python3-pip',
  'python3-numpy',
  'python3-pandas',
  'python3-matplotlib',
  'nodejs',
  'coreutils',
  'bash',
  'procps',
  'ca-certificates',
  'git',
  'curl',
];
export const DEFAULT_SUITE = 'bookworm';
export const VARIANT = 'minbase';

const PHASES: Record<string, string> = {
  Extracting: 'extracting',
  Unpacking: 'unpacking',
  Configuring: 'configuring',
  Installing: 'installing',
  Resolving: 'resolving',
  Checking: 'checking',
};

/**
 * Turns debootstrap's `I: <Verb> …` lines into progress events with a running count per phase.
 * debootstrap alternates `Retrieving <pkg> <version>` / `Validating <pkg> <version>` per package: both
 * become one 'downloading' phase counting packages; `Retrieving InRelease`/`Packages` are index fetches.
 */
export function createProgressParser(emit: (e: ProgressEvent) => void): (line: string) => void {
  const counts = new Map<string, number>();
  return (line: string) => {
    const m = /^I: (\w+)\s*(.*)$/.exec(line.trim());
    if (!m) return;
    const verb = m[1] as string;
    const rest = (m[2] as string).split(/\s+/).filter(Boolean);
    const isPackage = (verb === 'Retrieving' || verb === 'Validating') && rest.length === 2;
    let phase: string;
    if (isPackage) phase = 'downloading';
    else if (verb === 'Retrieving' || verb === 'Validating') phase = 'indexes';
    else phase = PHASES[verb] ?? 'debootstrap';
    const message = line.trim().slice(3);
    if (isPackage && verb === 'Retrieving') {
      // Count a package once, when it is fetched; its Validating line repeats the same count.
      counts.set(phase, (counts.get(phase) ?? 0) + 1);
    } else if (!isPackage) counts.set(phase, (counts.get(phase) ?? 0) + 1);
    emit({ phase, message, current: counts.get(phase) ?? 0 });
  };
}

export function validPackageName(p: string): boolean {
  // Debian policy: lowercase alnum plus + - . ; at least 2 chars, starts alnum. Also blocks option injection.
  return /^[a-z0-9][a-z0-9+.-]+$/.test(p);
}

export function validSuite(s: string): boolean {
  return /^[a-z][a-z0-9-]*$/.test(s);
}

/**
 * Run debootstrap into `target` (which must not exist or be empty), then drop the apt caches it leaves
 * behind (they are hundreds of MB of .deb files nobody in a sandbox needs).
 */
export async function debootstrap(opts: {
  suite: string;
  packages: readonly string[];
  mirror: string;
  target: string;
  onProgress?: (e: ProgressEvent) => void;
  signal?: AbortSignal;
  log?: Pick<Logger, 'info'>;
}): Promise<void> {
  const emit = opts.onProgress ?? (() => {});
  const parse = createProgressParser(emit);
  const tail: string[] = [];
  const args = [
    `--variant=${VARIANT}`,
    `--include=${opts.packages.join(',')}`,
    opts.suite,
    opts.target,
    opts.mirror,
  ];
  emit({ phase: 'debootstrap', message: `debootstrap ${opts.suite} from ${opts.mirror}` });
  const r = await run('debootstrap', args, {
    captureStdout: false,
    onLine: (line) => {
      tail.push(line);
      if (tail.length > 30) tail.shift();
      opts.log?.info({ line }, 'debootstrap');
      parse(line);
    },
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  if (opts.signal?.aborted) throw new ForkboxError('conflict', 'image build cancelled.');
  if (r.code !== 0) {
    throw new ForkboxError(
      'unavailable',
      `debootstrap failed (exit ${r.code ?? r.signal}). Check that the mirror ${opts.mirror} is reachable and serves '${opts.suite}' ` +
        `(override it with FORKBOX_DEBIAN_MIRROR) and that the packages exist. Last output:\n${tail.join('\n')}`,
      { suite: opts.suite, mirror: opts.mirror },
    );
  }
  emit({ phase: 'cleaning', message: 'removing apt caches and host settings' });
  // debootstrap copies the build host's /etc/hostname and /etc/resolv.conf into the target: an image must
  // not carry (or leak) the host's name and resolvers. The files stay, so the runtime can bind over them.
  await replaceFile(join(opts.target, 'etc/hostname'), 'sandbox\n');
  await replaceFile(
    join(opts.target, 'etc/resolv.conf'),
    '# set by forkbox when the sandbox has network access\n',
  );
  await clearDir(join(opts.target, 'var/cache/apt/archives'), (n) => n.endsWith('.deb'));
  await clearDir(join(opts.target, 'var/lib/apt/lists'), (n) => n !== 'partial' && n !== 'lock');
}

async function clearDir(dir: string, match: (name: string) => boolean): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  for (const n of names) if (match(n)) await rm(join(dir, n), { recursive: true, force: true });
}

/** Replace a file inside the target without following a symlink there (which would write to the host). */
async function replaceFile(path: string, text: string): Promise<void> {
  await rm(path, { force: true });
  await writeFile(path, text, { flag: 'wx', mode: 0o644 });
}
