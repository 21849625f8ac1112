/**
 * Pick the cgroup implementation for this host: pure v2 (most current distributions), else v1 controllers
 * (hybrid hosts like this project's, where the v2 mount at `unified` holds no controllers), else a hybrid
 * whose `unified` mount does carry the controllers.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import type { Cgroups } from './types.ts';
import { createCgroupsV1, resolveV1Mounts } from './v1.ts';
import { createCgroupsV2, V2_CONTROLLERS } from './v2.ts';

export const DEFAULT_CGROUP_ROOT = '/sys/fs/cgroup';

function v2Controllers(dir: string): string[] | null {
  try {
    return fs
      .readFileSync(path.join(dir, 'cgroup.controllers'), 'utf8')
      .split(/\s+/)
      .filter((w) => w !== '');
  } catch {
    return null;
  }
}

/** Which cgroup version forkbox uses on this host and where that hierarchy's root is mounted. */
export interface CgroupLayout {
  kind: 'v1' | 'v2';
  /** v2: the unified tree's root; v1: the directory holding one mount per controller. */
  root: string;
}

export function detectCgroups(opts: { root?: string } = {}): Cgroups {
  const layout = detectCgroupLayout(opts);
  return layout.kind === 'v2'
    ? createCgroupsV2({ root: layout.root })
    : createCgroupsV1({ root: layout.root });
}

export function detectCgroupLayout(opts: { root?: string } = {}): CgroupLayout {
  const root = opts.root ?? DEFAULT_CGROUP_ROOT;
  const findings: string[] = [];

  const pure = v2Controllers(root);
  if (pure !== null) {
    const missing = V2_CONTROLLERS.filter((c) => !pure.includes(c));
    if (missing.length === 0) return { kind: 'v2', root };
    findings.push(`cgroup v2 at ${root} lacks controller(s) ${missing.join(', ')}`);
  } else {
    const { missing } = resolveV1Mounts(root);
    if (missing.length === 0) return { kind: 'v1', root };
    findings.push(`cgroup v1 under ${root} lacks controller(s) ${missing.join(', ')}`);
    const unified = path.join(root, 'unified');
    const hybrid = v2Controllers(unified);
    if (hybrid !== null) {
      const hMissing = V2_CONTROLLERS.filter((c) => !hybrid.includes(c));
      if (hMissing.length === 0) return { kind: 'v2', root: unified };
      findings.push(`cgroup v2 at ${unified} lacks controller(s) ${hMissing.join(', ')}`);
    }
  }
  throw new ForkboxError(
    'requirement_missing',
    `no usable cgroup hierarchy: ${findings.join('; ')}. forkbox needs memory, pids and cpu control (plus cpuacct, cpuset and freezer on v1). Fix: boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1) and run forkbox as root (with systemd: Delegate=yes), or mount the v1 controllers at ${root}/<controller>; in a container use --privileged --cgroupns=host.`,
    { root, findings },
  );
}
