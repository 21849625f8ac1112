/** cgroup v1 statistics: memory in use (without reclaimable cache), peak, CPU time, pids, OOM kills. */
import path from 'node:path';
import { childGroups, parseKeyed, readCgroupFile, readNumber, readOptional } from './fsio.ts';
import type { CgroupStats } from './types.ts';
import type { V1Layout } from './v1-layout.ts';

/** memory.oom_control counts kills only in the memcg of the victim on v1, so sum over descendants. */
export async function oomKillsV1(dir: string): Promise<number> {
  const text = await readOptional(path.join(dir, 'memory.oom_control'));
  let n = text === null ? 0 : (parseKeyed(text).get('oom_kill') ?? 0);
  for (const child of await childGroups(dir)) n += await oomKillsV1(path.join(dir, child));
  return n;
}

export async function statsV1({ g, file }: V1Layout, rel: string): Promise<CgroupStats> {
  const memDir = g('memory', rel);
  const usage = await readNumber(path.join(memDir, 'memory.usage_in_bytes'));
  const memStat = parseKeyed(await readCgroupFile(path.join(memDir, 'memory.stat')));
  // usage_in_bytes is hierarchical and includes page cache; inactive file cache is reclaimable, so it
  // is not "used" in the sense a user cares about (same as docker stats).
  const inactive = memStat.get('total_inactive_file') ?? memStat.get('inactive_file') ?? 0;
  const peak = await readOptional(path.join(memDir, 'memory.max_usage_in_bytes'));
  return {
    memoryBytes: Math.max(0, usage - inactive),
    memoryPeakBytes: peak === null ? null : Number(peak.trim()),
    cpuUsageNs: await readNumber(file('cpuacct', rel, 'cpuacct.usage')),
    pids: await readNumber(file('pids', rel, 'pids.current')),
    oomKills: await oomKillsV1(memDir),
  };
}
