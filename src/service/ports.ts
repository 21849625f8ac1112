/**
 * Ports: the interfaces the service layer declares and that runtimes and stores implement.
 * Dependencies point inward: runtimes/ and storage/ import from here, never the reverse.
 */

import type { Duplex } from 'node:stream';
import type { ErrorCode } from '../domain/errors.ts';
import type { NetworkPolicy } from '../domain/network.ts';
import type { RuntimeName } from '../domain/runtime-id.ts';
import type {
  ExecRecord,
  ExecState,
  ImageRecord,
  Limits,
  SandboxRecord,
  SandboxState,
  SnapshotRecord,
  StreamSummary,
  TemplateRecord,
} from '../domain/types.ts';
import type { ProgressEvent } from './api.ts';

export type { StreamSummary } from '../domain/types.ts';

// ───────────────────────────── images ─────────────────────────────

export interface BuildDebianOptions {
  name?: string;
  suite?: string;
  packages?: string[];
  /** The browser variant: Chromium and fonts on top (default name `debian-browser`; docs/BROWSER.md). */
  browser?: boolean;
  onProgress?: (e: ProgressEvent) => void;
  signal?: AbortSignal;
  /**
   * Called when `name` holds an image built by debootstrap from another recipe (forkbox's default
   * package list changed, say): returning lets the build replace it, throwing refuses. Absent: refused.
   */
  mayReplace?: (existing: ImageRecord) => void;
}

/** The image catalog (images/store.ts): read-only layer roots and their metadata. */
export interface ImageStore {
  list(): ImageRecord[];
  get(name: string): ImageRecord | undefined;
  require(name: string): ImageRecord;
  buildDebian(opts: BuildDebianOptions): Promise<ImageRecord>;
  importImage(
    name: string,
    source: string,
    opts?: { onProgress?: (e: ProgressEvent) => void },
  ): Promise<ImageRecord>;
  /** Pull a registry reference (`host:port/name:tag`, `…@sha256:…`) into the store. */
  pull(ref: string, opts?: PullOptions): Promise<ImageRecord>;
  /** The image a name or reference names, pulling a reference on first use. */
  ensure(nameOrRef: string, opts?: PullOptions): Promise<ImageRecord>;
  remove(name: string): void;
  /**
   * Remove device nodes from layers made before builds dropped them (each layer once); returns how many
   * went. A layer's device could otherwise become a real one in an upper on the host (docs/IMAGES.md).
   */
  sweepDeviceNodes?(): Promise<number>;
  /** Remove what a crashed build, import or pull left (start and `gc`); returns the paths removed. */
  sweepTemps?(): Promise<string[]>;
}

export interface PullOptions {
  onProgress?: (e: ProgressEvent) => void;
  /** The caller came through the TCP listener: only --image-allow'ed images may be pulled. */
  remote?: boolean;
}

// ───────────────────────────── store ─────────────────────────────

export interface SandboxFilter {
  states?: readonly SandboxState[];
  /** Only sandboxes carrying all these labels. */
  labels?: Record<string, string>;
  tenant?: string;
  /** Only sandboxes in these namespaces (absent: every namespace). */
  namespaces?: readonly string[];
  session?: string;
}

/**
 * A named template config: sandboxes created from it are forked from a template container of its
 * image whose REPL worker pre-imported `prewarm` (docs/ARCHITECTURE.md, "Templates"). Host-wide, not per tenant.
 */
export interface TemplateConfigRecord {
  name: string;
  image: string;
  /** Dotted Python module names the template's worker imports before any sandbox is forked from it. */
  prewarm: string[];
  /** Sandboxes the warm pool keeps ready for it; null/absent: the daemon's `--pool` default. */
  pool?: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface ExecOutputChunk {
  seq: number;
  stream: 'stdout' | 'stderr';
  data: Buffer;
  /** Position of the chunk's first byte in its stream (absent from an older agent). */
  offset?: number;
}

/** The latest bytes of a stream while its output is past what is forwarded inline (for progress). */
export interface ExecPeek {
  stream: 'stdout' | 'stderr';
  /** The latest ≤ 2 KiB. */
  data: Buffer;
  /** Bytes the program wrote to the stream so far. */
  totalBytes: number;
}

/** What a daemon restart found of an exec recorded as running (Runtime.recoverExecs). */
export interface RecoveredExec {
  id: string;
  /** It ended while the daemon was down: its real result (output totals, no inline output). */
  result: ExecResult | null;
}

export interface Store {
  close(): void;
  /** Run `fn` as one transaction: its writes commit together, or (if it throws) none of them. */
  atomically<T>(fn: () => T): T;

  // sandboxes
  insertSandbox(rec: SandboxRecord): void;
  getSandbox(id: string): SandboxRecord | undefined;
  /** The live sandbox with this name in the tenant's namespace (default 'default'), else its newest one. */
  getSandboxByName(name: string, tenant?: string, namespace?: string): SandboxRecord | undefined;
  listSandboxes(filter?: SandboxFilter): SandboxRecord[];
  /**
   * Sandboxes whose PID 1 still runs: live ones and tombstones (killed, their PID 1 kept for descendants;
   * a killed sandbox keeps `hostPid` exactly while it is a tombstone). Bounded by what runs, not by history.
   */
  listPidNamespaceHolders(): SandboxRecord[];
  /** Move a sandbox to a new state; enforces the state machine (domain/sandbox-state.ts) inside one transaction. */
  transitionSandbox(
    id: string,
    to: SandboxState,
    patch?: Partial<Omit<SandboxRecord, 'id' | 'state'>>,
  ): SandboxRecord;
  updateSandbox(id: string, patch: Partial<Omit<SandboxRecord, 'id' | 'state'>>): SandboxRecord;
  deleteSandbox(id: string): void;

  // templates
  insertTemplate(rec: TemplateRecord): void;
  getTemplate(id: string): TemplateRecord | undefined;
  findTemplateByConfigKey(configKey: string): TemplateRecord | undefined;
  listTemplates(): TemplateRecord[];
  updateTemplate(id: string, patch: Partial<Omit<TemplateRecord, 'id'>>): TemplateRecord;
  deleteTemplate(id: string): void;

  // template configs (named, user-defined; distinct from the template containers above)
  /** Insert or replace the config with this name. */
  putTemplateConfig(rec: TemplateConfigRecord): void;
  getTemplateConfig(name: string): TemplateConfigRecord | undefined;
  listTemplateConfigs(): TemplateConfigRecord[];
  /** True when a config was deleted. */
  deleteTemplateConfig(name: string): boolean;

  // snapshots
  insertSnapshot(rec: SnapshotRecord): void;
  getSnapshot(id: string): SnapshotRecord | undefined;
  getSnapshotByName(name: string, tenant: string): SnapshotRecord | undefined;
  listSnapshots(tenant?: string): SnapshotRecord[];
  updateSnapshot(id: string, patch: Partial<Omit<SnapshotRecord, 'id'>>): SnapshotRecord;
  deleteSnapshot(id: string): void;

  // execs
  insertExec(rec: ExecRecord): void;
  getExec(id: string): ExecRecord | undefined;
  findExecByIdempotencyKey(sandboxId: string, key: string): ExecRecord | undefined;
  listExecs(sandboxId: string, limit?: number): ExecRecord[];
  updateExec(id: string, patch: Partial<Omit<ExecRecord, 'id' | 'sandboxId'>>): ExecRecord;
  /** Mark every exec still 'running' as `to` (used on daemon start: their agents' results were lost). */
  markRunningExecs(to: ExecState): number;
  /**
   * Execs of a sandbox whose processes may still run: running ones, and ended ones that left processes
   * behind (`tree` set). Recovery and sandbox kills use it.
   */
  listLiveExecs(sandboxId: string): ExecRecord[];
  /** Append output; the store keeps at most `capBytes` per exec (older chunks beyond the cap are dropped). */
  appendExecOutput(execId: string, chunk: ExecOutputChunk, capBytes: number): void;
  /** At most `maxBytes` (at least one chunk) of the chunks after `afterSeq`, in order. */
  readExecOutput(execId: string, afterSeq: number, maxBytes?: number): ExecOutputChunk[];
  /** Seq of the oldest chunk kept for an exec, or null when none is. */
  firstExecOutputSeq(execId: string): number | null;

  // retention (see service/retention.ts)
  /** Sandboxes per state (one GROUP BY over an index), of one tenant or of all. */
  /** Sandboxes by state: of `tenant` (all when absent), in `namespaces` (all of the tenant's when absent). */
  countSandboxesByState(tenant?: string, namespaces?: readonly string[]): Record<string, number>;
  /** Delete up to `maxRows` chunks of exec output of sandboxes that ended; returns how many went. */
  dropEndedOutput(maxRows: number): number;
  /**
   * Delete up to `max` sandboxes that ended at or before `before` (epoch ms), with their execs; never a
   * tombstone, a parent of a live sandbox, or the alias of a live one. Returns their ids.
   */
  pruneEnded(before: number, max: number): string[];
  /** Give up to `pages` free database pages back to the filesystem; returns how many were. */
  vacuumIncrementally(pages: number): number;
}

// ───────────────────────────── runtime ─────────────────────────────

export interface RuntimeCapabilities {
  /** The runtime can fork a running sandbox's Python process memory into children. */
  forkProcessState: boolean;
  /** The runtime can freeze and thaw a sandbox. */
  pause: boolean;
  /** Limits the runtime enforces. */
  limits: { memory: boolean; pids: boolean; cpu: boolean; disk: boolean };
  /** Network egress is available. */
  network: boolean;
  /**
   * A fork or snapshot carries every process of the source (servers, background jobs, the browser), not
   * only its files and Python REPL. Absent: false.
   */
  forkProcesses?: boolean;
  /** What a sandbox of this runtime cannot do: each such call fails with an error naming the runtime. */
  unsupported?: string[];
}

export interface CreateSandboxSpec {
  id: string;
  name: string;
  /**
   * Whose it is (a tenant): the runtime never lets a sandbox share what the kernel counts per user, or a
   * parent user namespace, with another group's (docs/SECURITY.md).
   */
  group: string;
  image: string;
  limits: Limits;
  env: Record<string, string>;
  /** Read-only layers to stack on instead of the image's (restoring a snapshot's files). */
  lowers?: string[];
  /** Python modules the template it is forked from pre-imported (picks, or starts, that template). */
  prewarm: string[];
  /** Its network policy (default none: loopback only). */
  network?: NetworkPolicy;
  /** The user's project directory (a checked real path) and where the sandbox sees it. */
  project?: { hostPath: string; mountPath: string };
  /** Which runtime makes it (RUNTIME_NAMES; default: the daemon's default runtime). */
  runtime?: RuntimeName;
}

export interface ForkChildSpec {
  id: string;
  name: string;
  env: Record<string, string>;
  limits: Limits;
  forkIndex: number;
  /** Its network policy, the source's (default none: loopback only). */
  network?: NetworkPolicy;
  /**
   * A snapshot's holder: kept paused and only ever forked, never used, so the runtime starts none of what
   * serves a running sandbox's network (an `open` NAT; each restore gets its own).
   */
  held?: boolean;
  /** A revival (Runtime.reviveSandbox): its storage dir exists, with its files; open it, make none. */
  reuseDir?: boolean;
}

export type ForkChildOutcome =
  | { id: string; ok: true; handle: SandboxHandle }
  /** `code`: the catalog code of the child's failure (default 'internal'). */
  | { id: string; ok: false; error: string; code?: ErrorCode };

export interface ForkOutcome {
  /** How long the source's workload (everything but its agent and idle REPL worker) was frozen. */
  pauseMs: number;
  /** Time to freeze the source's writable layer into a read-only one. */
  snapshotMs: number;
  /** Storage driver that froze the layer. */
  driver: string;
  /** False when the fork fell back to filesystem-only (depth limit, or a runtime that cannot). */
  pythonState: boolean;
  children: ForkChildOutcome[];
}

export interface SandboxHandle {
  id: string;
  hostPid: number;
  runtime: Record<string, unknown>;
}

export interface ExecSpec {
  argv?: string[];
  cmd?: string;
  cwd?: string;
  env?: Record<string, string>;
  stdin?: boolean;
  timeoutMs?: number;
  /** Inline budget per stream (head + tail); the rest goes to the spool file. */
  maxOutputBytes?: number;
  /** Bytes of each stream kept in the spool file inside the sandbox (0 = none). */
  spoolBytes?: number;
  /** The exec's id: names its spool files and lets a restarted daemon ask for its result. */
  execId?: string;
  /**
   * 'head' (default): the head of each stream is forwarded at once, the tail at the end, peeks between.
   * 'latest' (background execs): everything is forwarded, at a bounded rate per stream; when output is
   * faster, the newest bytes are (chunk offsets show the gaps; the spool file has everything).
   */
  mode?: 'head' | 'latest';
  /** Under a pseudo-terminal of this size (stdin is then the terminal's input). */
  tty?: { rows: number; cols: number };
}

export interface ExecEvents {
  onStarted?: (pid: number) => void;
  onOutput?: (chunk: ExecOutputChunk) => void;
  onPeek?: (peek: ExecPeek) => void;
}

export interface ExecResult {
  exitCode: number | null;
  signal: number | null;
  timedOut: boolean;
  cancelled: boolean;
  truncated: boolean;
  oomKilled: boolean;
  durationMs: number;
  stdout: Buffer;
  stderr: Buffer;
  streams?: { stdout: StreamSummary; stderr: StreamSummary };
  /**
   * Processes of the exec still running when its main process ended (`server &`, daemons): they keep
   * running; `Runtime.killExecTree(rec, tree)` ends them. 0 after a timeout, cancel or kill (the whole
   * tree is ended then).
   */
  leftovers: number;
  /** The runtime's name for the exec's process tree (null where the runtime has none). */
  tree: string | null;
}

/** A running exec: its result, plus ways to feed stdin and cancel it. */
export interface ExecHandle {
  readonly result: Promise<ExecResult>;
  writeStdin(data: Buffer, eof?: boolean): Promise<void>;
  signal(sig: number): Promise<void>;
  /** Set the terminal size of an exec started with `tty`. */
  resize(size: { rows: number; cols: number }): Promise<void>;
  /** End the exec's whole process tree; its result then says cancelled. */
  cancel(): void;
}

export interface ReplEvalOptions {
  /** Which persistent REPL: Python (default) or Node.js. */
  language?: 'python' | 'node';
  timeoutMs?: number;
  /** Inline budget per stream (head + tail). */
  maxOutputBytes?: number;
  /** How much of each stream to keep in a spool file inside the sandbox (0 = none). */
  spoolBytes?: number;
  /** The head of each stream as it arrives. */
  onOutput?: (chunk: ExecOutputChunk) => void;
  /** The latest bytes of a stream flowing past its head (at most every 2 s; for progress, not kept). */
  onPeek?: (p: ExecPeek) => void;
  /** Aborting interrupts the code (KeyboardInterrupt), escalating to a restart; a queued call is dropped. */
  signal?: AbortSignal;
}

export interface ReplResult {
  ok: boolean;
  value: string | null;
  stdout: string;
  stderr: string;
  error: { type: string; message: string; traceback: string } | null;
  timedOut: boolean;
  interrupted: boolean;
  /** The call was cancelled (RunOptions.signal): interrupted while running, or dropped before it ran. */
  cancelled?: boolean;
  restarted: boolean;
  truncated: boolean;
  oomKilled: boolean;
  images: { mime: string; dataB64: string }[];
  durationMs: number;
  streams?: { stdout: StreamSummary; stderr: StreamSummary };
}

export type FileType = 'file' | 'dir' | 'symlink' | 'other';

export interface FileStat {
  path: string;
  type: FileType;
  size: number;
  mode: number;
  mtimeMs: number;
  uid?: number;
  gid?: number;
  linkTarget?: string;
  /** Regular files: the ETag `ifMatch` takes (docs/AGENT-PROTOCOL.md, `file.read`). */
  etag?: string;
}

/** A read of part of a file. `sparse`: holes are skipped (see FileRead.extents). */
export interface FileReadOptions {
  offset?: number;
  length?: number;
  sparse?: boolean;
}

export interface FileRead {
  /** The bytes read; with `sparse`, the bytes of `extents` back to back. */
  data: Buffer;
  /** The whole file's size when it was opened (the read never goes past it). */
  size: number;
  /** The file's ETag when it was opened. */
  etag: string;
  /** `sparse` only: the data ranges of the window as [offset, length]; the rest of it is holes. */
  extents?: [number, number][];
  /** `sparse` only: where the next read should start. */
  end?: number;
}

/** How a write lands: replace atomically (default), or in place by `append` or at `offset`. */
export interface FileWriteOptions {
  mode?: number;
  createDirs?: boolean;
  append?: boolean;
  offset?: number;
  /** Write only if the file's ETag is this one, checked and written in one step (else `conflict`). */
  ifMatch?: string;
}

export interface FileWritten {
  /** The file's size after the write. */
  size: number;
  etag: string;
}

export interface FileEntry {
  path: string;
  name: string;
  type: FileType;
  size: number;
  mode: number;
  mtimeMs: number;
}

export interface SandboxUsage {
  memoryBytes: number;
  cpuUsageNs: number;
  pids: number;
  /** Bytes the sandbox stores of its own writes (what counts against its disk limit). */
  diskBytes: number;
  /** Inodes it uses; null where the storage does not count them (btrfs). */
  diskInodes: number | null;
  oomKills: number;
}

/** A sandbox's project directory as layers: `lowers` ends with the host directory. */
export interface ProjectChain extends LayerChain {
  hostPath: string;
  mountPath: string;
  /** The project layer (where its manifest is). */
  layer: string;
}

/** A sandbox's filesystem as overlay layers: its writable upper over read-only lowers (newest first). */
export interface LayerChain {
  upper: string;
  lowers: string[];
}

/** One side of a changed path. Sizes are bytes (0 for directories); mode is the permission bits. */
export interface DiffSide {
  type: FileType;
  size: number;
  mode: number;
  /** Hex SHA-256 of a regular file, where it was computed (same-size files are hashed to compare them). */
  sha256?: string;
  linkTarget?: string;
}

/** A changed path (absolute inside the sandbox): `a` is its state in A, `b` in B; absent = does not exist. */
export interface DiffEntry {
  path: string;
  a?: DiffSide;
  b?: DiffSide;
  /** For modified paths: what differs (type, size, content, mode, owner, target, device). */
  changes?: string[];
}

/** A file the sandbox moved: removed at `from`, added at `to` with the same bytes (project diffs). */
export interface RenamedEntry {
  from: string;
  to: string;
  a: DiffSide;
  b: DiffSide;
}

export interface LayerDiffOptions {
  /** Only paths equal to or under one of these absolute paths. */
  paths?: string[];
  /** Also return a unified text diff of this absolute path. */
  unifiedFor?: string;
  /** Bound on filesystem entries examined (default 200 000); past it the result says `truncated`. */
  maxEntries?: number;
}

export interface LayerDiff {
  /** The nearest common layer's id, or null when the two share none (full views were compared). */
  base: string | null;
  added: DiffEntry[];
  removed: DiffEntry[];
  modified: DiffEntry[];
  /** Project diffs only: exact renames, listed here instead of in `added` and `removed`. */
  renamed?: RenamedEntry[];
  truncated: boolean;
  unified?: string;
}

export interface RuntimeEvents {
  /** A sandbox's agent connected (first time or after a daemon restart). */
  onSandboxConnected?: (id: string) => void;
  /**
   * A sandbox ended without a kill request: its PID 1 died (OOM, killed, crashed) or its agent stopped
   * answering. `id` is its runtime id (`runtime.rid`, see domain/runtime-id.ts); `reason` says what
   * happened, for its `endReason`. The engine marks it failed and has the runtime release it.
   */
  onSandboxExited?: (id: string, reason: string) => void;
}

/** Why a connection to a sandbox's control socket was refused before it was trusted. */
export type ControlRefusal = 'peer' | 'limit' | 'hello';

/** Why admission refused a create or a fork. */
export type AdmissionRefusal = 'memory_pressure' | 'memory_available' | 'memory_limits' | 'disk' | 'fds';

/** Counters a runtime reports into; the daemon serves them on /metrics (service/host-metrics.ts). */
export interface RuntimeCounters {
  controlConnectionRefused(reason: ControlRefusal): void;
  admissionRefused(reason: AdmissionRefusal): void;
  /** A connection through a sandbox's egress proxy, accepted or refused. */
  egressDecision?(decision: 'accepted' | 'refused'): void;
  /** A connection to a sandbox's published port, accepted or refused. */
  portConnection?(decision: 'accepted' | 'refused'): void;
}

/** Published ports: a server on a sandbox's loopback reachable from the host (absent: not supported). */
export interface RuntimePorts {
  /** Publish `port` of the sandbox on host 127.0.0.2:`hostPort` (0: a free one); returns the host port. */
  publish(rec: SandboxRecord, port: number, hostPort: number): Promise<number>;
  /** A connection to the sandbox's published `port` (for the HTTP listener). */
  connect(rec: SandboxRecord, port: number): Promise<Duplex>;
  /** A connection to `port` on the sandbox's loopback, published or not (the daemon's own use: its browser). */
  dial?(rec: SandboxRecord, port: number): Promise<Duplex>;
}

export interface Runtime {
  readonly name: string;
  readonly capabilities: RuntimeCapabilities;
  /**
   * A daemon with several runtimes (runtimes/runtime-router.ts): the runtimes a create may name, each with
   * what it can do. Absent: only `name`.
   */
  readonly runtimes?: Readonly<Partial<Record<RuntimeName, RuntimeCapabilities>>>;
  /** The runtime that made a sandbox (absent: `name`). */
  runtimeOf?(rec: SandboxRecord): RuntimeName;
  readonly ports?: RuntimePorts;

  /** Where the runtime reports sandboxes that end on their own (the engine subscribes once, at start). */
  setEvents?(events: RuntimeEvents): void;

  /** Start-up: re-adopt sandboxes recorded as live; returns the ids that could not be recovered. */
  recover(
    live: SandboxRecord[],
    templates: TemplateRecord[],
    deadlineMs: number,
  ): Promise<{ lost: string[] }>;
  createSandbox(spec: CreateSandboxSpec): Promise<SandboxHandle>;
  /**
   * Optional: start a recorded sandbox whose processes are gone (a reboot, a container restart) again,
   * on its kept files, as a new PID 1 from its image's template: its files are back, its processes and
   * Python state are not. Rejects when its files or layers are gone (it is then lost).
   */
  reviveSandbox?(rec: SandboxRecord): Promise<SandboxHandle>;
  /**
   * Fork a running sandbox into children that inherit its files (as of one instant) and, where the
   * runtime can, its Python REPL's memory. Each child succeeds or fails on its own.
   */
  forkSandbox(
    source: SandboxRecord,
    children: ForkChildSpec[],
    opts?: { wait?: boolean },
  ): Promise<ForkOutcome>;
  /**
   * Kill a sandbox. With `keepInit`, only its own processes die and its PID 1 stays as a tombstone,
   * because descendants live inside its pid namespace; kill it again without keepInit once they end.
   */
  killSandbox(rec: SandboxRecord, opts?: { keepInit?: boolean }): Promise<void>;
  pauseSandbox(rec: SandboxRecord): Promise<void>;
  resumeSandbox(rec: SandboxRecord): Promise<void>;
  usage(rec: SandboxRecord): Promise<SandboxUsage>;

  exec(rec: SandboxRecord, spec: ExecSpec, events?: ExecEvents): ExecHandle;
  /**
   * Make ready what a first exec would otherwise wait for (the native runtime: its spawner, started and
   * placed in a fresh exec group), runs nothing. The warm pool calls it for the sandboxes it keeps ready.
   */
  prepareExecs?(rec: SandboxRecord): Promise<void>;
  /** End every process left of an exec's tree (ExecResult.tree); returns how many there were. */
  killExecTree(rec: SandboxRecord, tree: string): Promise<number>;
  /** Processes still running in an exec's tree. */
  execTreeSize(rec: SandboxRecord, tree: string): Promise<number>;
  /**
   * After a daemon restart, for a re-adopted sandbox: the results of `running` execs that ended while
   * the daemon was down; every other exec process tree of the sandbox, except `keep` (ended execs whose
   * leftovers were reported), is killed — the execs still running among them end for real.
   */
  recoverExecs(rec: SandboxRecord, running: string[], keep: string[]): Promise<RecoveredExec[]>;
  /** Evaluate `code` in the sandbox's REPL; `oomKilled` when the REPL restarted after an OOM kill. */
  replEval(rec: SandboxRecord, code: string, opts: ReplEvalOptions): Promise<ReplResult>;
  /** Restart the sandbox's REPL (its state is lost). */
  replRestart(rec: SandboxRecord): Promise<void>;

  /** Read a file (or a range of it) from the sandbox. */
  readFile(rec: SandboxRecord, path: string, opts?: FileReadOptions): Promise<FileRead>;
  /** Write a file in the sandbox. */
  writeFile(rec: SandboxRecord, path: string, data: Buffer, opts?: FileWriteOptions): Promise<FileWritten>;
  /** List a directory (at most `limit` entries, default 10000; `recursive`: its whole tree). */
  listFiles(
    rec: SandboxRecord,
    path: string,
    opts?: { recursive?: boolean; limit?: number },
  ): Promise<{ entries: FileEntry[]; truncated: boolean }>;
  /** Stat one path in the sandbox. */
  statFile(rec: SandboxRecord, path: string): Promise<FileStat>;
  /** Delete a file, or a directory with `recursive`. */
  deleteFile(rec: SandboxRecord, path: string, opts?: { recursive?: boolean }): Promise<void>;
  /** Make a directory (and its parents unless `parents` is false). */
  mkdir(rec: SandboxRecord, path: string, opts?: { parents?: boolean }): Promise<void>;
  /** Move `from` to `to` (replacing an existing target only with `overwrite`). */
  moveFile(rec: SandboxRecord, from: string, to: string, opts?: { overwrite?: boolean }): Promise<void>;

  /** A live sandbox's overlay layers (read from the host; nothing runs inside the sandbox). */
  layerChain(rec: SandboxRecord): LayerChain;
  /** Compare two layer chains down to their nearest common layer (docs/ARCHITECTURE.md, "Diff"). */
  diffLayers(a: LayerChain, b: LayerChain, opts?: LayerDiffOptions): Promise<LayerDiff>;
  /**
   * A sandbox's project (docs/STORAGE.md, "Project directories"): the host directory and the chain over
   * it as the sandbox sees its mount path (null: it has none). Runtimes without projects leave it out.
   */
  projectChain?(rec: SandboxRecord): ProjectChain | null;
  /** The project diff with its exact renames paired (moved from added/removed into `renamed`). */
  projectRenames?(p: ProjectChain, diff: LayerDiff): Promise<LayerDiff>;
  /** A `git apply`-able patch from the host directory to the sandbox's view, for a project diff's paths. */
  projectPatch?(p: ProjectChain, diff: LayerDiff): Promise<string>;
  /** Write a project diff's paths back to the host directory, refusing if the host changed them since. */
  applyProject?(p: ProjectChain, diff: LayerDiff): Promise<{ written: string[]; removed: string[] }>;

  /**
   * A template config was deleted: stop the template container of (image, prewarm) unless a live
   * sandbox was forked from it or the image's default template is the same one. True when one stopped.
   */
  releaseTemplate?(image: string, prewarm: string[]): Promise<boolean>;

  /** Stop every template and release every host resource this runtime holds (used by tests and `gc --all`). */
  shutdown(opts: { killSandboxes: boolean }): Promise<void>;
}

export type { BrowserHistory, BrowserHost, Browsers } from './browser/browser-ports.ts';
