export { type CgroupLayout, DEFAULT_CGROUP_ROOT, detectCgroupLayout, detectCgroups } from './detect.ts';
export type { CgroupLimits, CgroupStats, Cgroups } from './types.ts';
export { CPU_PERIOD_US, DEFAULT_FREEZE_TIMEOUT_MS, DEFAULT_KILL_TIMEOUT_MS } from './types.ts';
export { createCgroupsV1, resolveV1Mounts, V1_CONTROLLERS } from './v1.ts';
export { createCgroupsV2, V2_CONTROLLERS } from './v2.ts';
