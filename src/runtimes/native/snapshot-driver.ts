/**
 * Storage drivers: how a sandbox's writable upper directory is frozen into a read-only layer that
 * forked children stack on (DESIGN.md 2.2).
 *
 * - `copy` (any filesystem): `cp -a --reflink=auto`. Correct everywhere; cost grows with the upper's size
 *   (free on filesystems with reflinks, e.g. XFS and btrfs).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ForkboxError } from '../../domain/errors.ts';

export interface SnapshotDriver {
  readonly name: string;
  /** Freeze `upperDir` into a new read-only layer; returns the layer's absolute path. */
  freeze(upperDir: string): Promise<string>;
  remove(layer: string): Promise<void>;
  /** Every layer this driver made. */
  list(): Promise<string[]>;
}

/** Snapshot layers live beside image layers, with a prefix image ids never have. */
export const SNAPSHOT_PREFIX = 's-';

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    p.on('error', reject);
    p.on('exit', (code) =>
      code === 0
        ? resolve()
        : reject(new ForkboxError('internal', `${cmd} failed (exit ${code}): ${err.trim().slice(0, 500)}`)),
    );
  });
}

export function createCopyDriver(layersDir: string): SnapshotDriver {
  return {
    name: 'copy',
    async freeze(upperDir) {
      const id = `${SNAPSHOT_PREFIX}${randomBytes(5).toString('hex')}`;
      const layer = join(layersDir, id);
      const tmp = `${layer}.tmp`;
      try {
        // -a keeps owners, modes, xattrs (overlay's opaque markers) and whiteout device nodes.
        await run('cp', ['-a', '--reflink=auto', upperDir, tmp]);
        renameSync(tmp, layer);
      } catch (e) {
        rmSync(tmp, { recursive: true, force: true });
        throw e;
      }
      return layer;
    },
    async remove(layer) {
      rmSync(layer, { recursive: true, force: true });
    },
    async list() {
      try {
        return readdirSync(layersDir)
          .filter((n) => n.startsWith(SNAPSHOT_PREFIX) && !n.endsWith('.tmp'))
          .map((n) => join(layersDir, n));
      } catch {
        return [];
      }
    },
  };
}
