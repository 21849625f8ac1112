/** The agent's code ships in src/agent; it is copied into the state dir under a content hash. */
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ForkboxError } from '../../../domain/errors.ts';
import type { NativePaths } from '../host/paths.ts';

function agentSourceDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const cand of [join(here, '../../../agent'), join(here, '../../../../src/agent')]) {
    if (existsSync(join(cand, 'agent.py'))) return cand;
  }
  throw new ForkboxError(
    'requirement_missing',
    `forkbox's agent code (agent.py) is missing next to ${here}; reinstall forkbox.`,
  );
}

export function installAgent(paths: NativePaths): { dir: string; hash: string } {
  const src = agentSourceDir();
  const files = readdirSync(src)
    .filter((f) => f.endsWith('.py') || f.endsWith('.cjs'))
    .sort();
  const h = createHash('sha256');
  for (const f of files)
    h.update(f)
      .update('\0')
      .update(readFileSync(join(src, f)))
      .update('\0');
  const hash = h.digest('hex').slice(0, 16);
  const dir = paths.agentDir(hash);
  if (!existsSync(join(dir, 'agent.py'))) {
    const tmp = `${dir}.tmp-${randomBytes(4).toString('hex')}`;
    mkdirSync(tmp, { recursive: true, mode: 0o755 });
    // Modes set explicitly, whatever the umask: the sandboxes' root (an unprivileged host uid) reads them.
    chmodSync(tmp, 0o755);
    for (const f of files) {
      copyFileSync(join(src, f), join(tmp, f));
      chmodSync(join(tmp, f), 0o644);
    }
    try {
      renameSync(tmp, dir);
    } catch {
      rmSync(tmp, { recursive: true, force: true }); // another process installed it first
    }
  }
  return { dir, hash };
}
