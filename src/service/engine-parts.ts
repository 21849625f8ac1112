/** What the engine's API builders share: its collaborators, wired once by createEngine. */
import type { Logger } from '../domain/logger.ts';
import type { SandboxRecord } from '../domain/types.ts';
import type { KeyedQueue } from '../util/keyed-queue.ts';
import type { DiskUsage, ForkRequest, ForkResult, GcReport, MergeResult, SandboxInfo } from './api.ts';
import type { CallerContext, SandboxFinder } from './caller.ts';
import type { DiffPages } from './diff/diff-pages.ts';
import type { HeavyCalls } from './diff/heavy-calls.ts';
import type { ExecManager } from './execs/exec-manager.ts';
import type { Browsers, ImageStore, Runtime, Store } from './ports.ts';
import type { CreateSandbox } from './sandboxes/sandbox-create.ts';
import type { SandboxPorts } from './sandboxes/sandbox-ports.ts';
import type { TemplateConfigs } from './sandboxes/template-configs.ts';
import type { Snapshots } from './snapshots/snapshots.ts';
import type { WarmPool } from './warm-pool.ts';

export interface EngineParts extends SandboxFinder {
  store: Store;
  runtime: Runtime;
  images: ImageStore;
  /** The image whose python3 runs the agent in images without one (EngineDeps.agentRuntimeImage). */
  agentRuntimeImage: string | null;
  log: Logger;
  now: () => number;
  version: string;
  stateDir: string;
  execs: ExecManager;
  templateConfigs: TemplateConfigs;
  pool: WarmPool;
  snapshots: Snapshots;
  /** Per-sandbox serialisation of lifecycle operations (kill vs pause vs resume). */
  lifecycle: KeyedQueue;
  create: CreateSandbox;
  ports: SandboxPorts;
  kill(rec: SandboxRecord, reason: string): Promise<SandboxRecord>;
  killTree(rec: SandboxRecord, reason: string): Promise<SandboxRecord>;
  fork(ctx: CallerContext, source: SandboxRecord, req: ForkRequest): Promise<ForkResult>;
  merge(ctx: CallerContext, parent: SandboxRecord, winner: SandboxRecord): Promise<MergeResult>;
  /** The record as the API shows it, with its live children. */
  withKids(rec: SandboxRecord): SandboxInfo;
  gc(): Promise<GcReport>;
  df(): Promise<DiskUsage>;
  /** The sandboxes' open browsers (src/browser/). */
  browsers: Browsers | undefined;
  /** Calls whose cost the caller controls (diffs), a few at once per tenant (heavy-calls.ts). */
  heavy: HeavyCalls;
  /** Diffs kept for the cursors of their next pages (diff-pages.ts). */
  diffPages: DiffPages;
}
