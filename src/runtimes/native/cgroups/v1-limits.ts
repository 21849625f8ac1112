/** cgroup v1 limits: memory (+ memsw, so no swap beyond the limit), pids, CPU quota and weight. */
import { fileExists, isUnlimited, readNumber, writeCgroupFile } from './fsio.ts';
import { type CgroupLimits, CPU_PERIOD_US } from './types.ts';
import type { V1Layout } from './v1-layout.ts';

export interface V1Limits {
  /** `fresh`: the group was made just now and has the kernel's defaults, so nothing needs reading first. */
  setLimits(rel: string, limits: CgroupLimits, fresh?: boolean): Promise<void>;
  setCpuWeight(rel: string, relative: number): Promise<void>;
}

export function createV1Limits({ file }: V1Layout): V1Limits {
  /** memory.memsw (memory+swap) exists only with swap accounting, a host-wide setting: look once. */
  let memswKnown: boolean | undefined;
  async function setMemory(rel: string, bytes: number, fresh: boolean): Promise<void> {
    const limit = file('memory', rel, 'memory.limit_in_bytes');
    const memsw = file('memory', rel, 'memory.memsw.limit_in_bytes');
    const value = isUnlimited(bytes) ? '-1' : String(Math.floor(bytes));
    // Setting memsw to the memory limit means "no swap beyond the limit": without it a sandbox could push
    // its overflow to swap and thrash the host.
    memswKnown ??= fileExists(memsw);
    if (!memswKnown) return writeCgroupFile(limit, value);
    // The kernel requires memsw ≥ limit at every moment (EINVAL otherwise): when raising, memsw goes first;
    // when lowering, the limit goes first. A group just made is unlimited: any limit lowers it.
    const current = fresh ? Number.POSITIVE_INFINITY : await readNumber(limit);
    const raising = isUnlimited(bytes) || bytes > current;
    if (raising) {
      await writeCgroupFile(memsw, value);
      await writeCgroupFile(limit, value);
    } else {
      await writeCgroupFile(limit, value);
      await writeCgroupFile(memsw, value);
    }
  }

  return {
    async setLimits(rel, limits, fresh = false) {
      await setMemory(rel, limits.memoryBytes, fresh);
      // pids.max is the fork-bomb guard: without it one sandbox can exhaust the host's pid space.
      await writeCgroupFile(
        file('pids', rel, 'pids.max'),
        isUnlimited(limits.pids) ? 'max' : Math.floor(limits.pids),
      );
      // A group just made has the kernel's default period, which is forkbox's.
      if (!fresh) await writeCgroupFile(file('cpu', rel, 'cpu.cfs_period_us'), CPU_PERIOD_US);
      const quota = isUnlimited(limits.cpus) ? -1 : Math.max(1000, Math.round(limits.cpus * CPU_PERIOD_US));
      await writeCgroupFile(file('cpu', rel, 'cpu.cfs_quota_us'), quota);
    },

    async setCpuWeight(rel, relative) {
      // cpu.shares takes 2..262144; 1024 is the default.
      const shares = Math.min(262144, Math.max(2, Math.round(1024 * relative)));
      await writeCgroupFile(file('cpu', rel, 'cpu.shares'), shares);
    },
  };
}
