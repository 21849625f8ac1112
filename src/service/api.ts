/**
 * The engine's public API: what the daemon serves and what the CLI (and later MCP/REST) call.
 * The in-process engine (service/engine.ts) and the daemon client (transports/daemon-client.ts) both
 * implement it, so every surface works the same in-process and against a daemon.
 */

import type { Duplex } from 'node:stream';
import type { BrowserAction, BrowserResult } from '../domain/browser.ts';
import type { RuntimeName } from '../domain/runtime-id.ts';
import type { ExecRecord, ImageRecord, Limits, SandboxRecord } from '../domain/types.ts';
import type {
  ExecOutputChunk,
  ExecPeek,
  FileEntry,
  FileRead,
  FileReadOptions,
  FileStat,
  FileWriteOptions,
  FileWritten,
  LayerDiff,
  ReplResult,
  RuntimeCapabilities,
  SandboxUsage,
  StreamSummary,
} from './ports.ts';

export interface CreateOptions {
  /** The pull of an image not yet in the store (a registry reference on first use): its phases and bytes. */
  onProgress?: (e: ProgressEvent) => void;
}

/**
 * The limits, lifetime, environment and labels a new sandbox is asked for (create, fork, restore). Absent:
 * the daemon's defaults for a create, the source's for a fork or restore.
 */
export interface SandboxShapeRequest {
  memoryMb?: number;
  cpus?: number;
  pids?: number;
  /**
   * Disk limit in MiB (a create's default: the daemon's FORKBOX_DISK_DEFAULT). A fork child's covers only
   * its own writes: what it inherits is in the source's frozen layer.
   */
  diskMb?: number;
  /** Inode limit (files, directories, …). */
  diskInodes?: number;
  ttlSeconds?: number;
  /** A fork or restore adds these to the source's environment in each child. */
  env?: Record<string, string>;
  labels?: Record<string, string>;
}

export interface CreateSandboxRequest extends SandboxShapeRequest {
  image?: string;
  name?: string;
  /** Keep the sandbox when the client session that created it ends (default: removed with it). */
  persistent?: boolean;
  /**
   * Named template config to create it from (default 'default'): its image, and a template whose
   * REPL already imported the config's modules. `image`, when also given, must be the template's.
   */
  template?: string;
  /** Network policy: 'none' (default: loopback only) or 'allow:<names, *.suffix, CIDRs>' (domain/network.ts). */
  network?: string;
  /**
   * The user's project: "DIR" or "DIR:/path" (default /work), a host directory under one of the
   * daemon's project roots, seen copy-on-write (docs/STORAGE.md, "Project directories").
   */
  project?: string;
  /** Loopback ports to publish on free host ports (see exposePort). */
  ports?: number[];
  /**
   * Its namespace (default: the caller's, `default` unless its token is limited to others): its name is
   * unique there, and `namespace/name` finds it from anywhere.
   */
  namespace?: string;
  /**
   * The runtime that makes it (default: the daemon's, `native`): `native` forks its files and Python REPL
   * in milliseconds; `gvisor` (runsc) forks carry every running process. `unavailable` when the daemon
   * has no such runtime (SystemStatus.runtimes lists those it has).
   */
  runtime?: RuntimeName;
}

/** A published port: `port` on the sandbox's loopback answers on the host at `address`. */
export interface PortInfo {
  port: number;
  hostPort: number;
  /** `127.0.0.2:<hostPort>`. */
  address: string;
}

/** What `applyProject` wrote to the host directory (paths relative to it). */
export interface ProjectApplyResult {
  sandbox: string;
  project: string;
  written: string[];
  removed: string[];
}

/** A named template config (see defineTemplate). */
export interface TemplateInfo {
  name: string;
  image: string;
  /** Python modules every sandbox created from it has already imported. */
  prewarm: string[];
  /** Sandboxes the warm pool keeps ready for it; null: the daemon's `--pool` default. */
  pool: number | null;
  /** True for 'default' (the default image, nothing pre-imported), which always exists. */
  builtin: boolean;
  createdAt: string | null;
  updatedAt: string | null;
}

export interface DefineTemplateRequest {
  /** 1-63 letters, digits, '.', '_' or '-'; not 'default'. */
  name: string;
  /** Default: the default image. */
  image?: string;
  /** Dotted Python module names (at most 64), imported once by the template; default none. */
  prewarm?: string[];
  /** Sandboxes the warm pool keeps ready for it (0 = none); default: the daemon's `--pool`. */
  pool?: number;
}

export interface SandboxInfo {
  id: string;
  name: string;
  /** Its namespace (names are unique per namespace; `namespace/name` is a reference to it). */
  namespace: string;
  state: SandboxRecord['state'];
  image: string;
  parentId: string | null;
  depth: number;
  limits: Limits;
  labels: Record<string, string>;
  createdAt: string;
  expiresAt: string | null;
  endReason: string | null;
  /** False when the sandbox ends with the client session that created it. */
  persistent: boolean;
  /** Ids of its children that are alive (forks of it). */
  children: string[];
  /** Its network policy ('none', or 'allow:…'). */
  network: string;
  /** Its published ports (absent: none). */
  ports?: PortInfo[];
  usage?: SandboxUsage;
  /** The runtime that made it (CreateSandboxRequest.runtime, or its source's for a fork or restore). */
  runtime: RuntimeName;
  /** What that runtime can do (SystemStatus.capabilities is the daemon's default runtime's). */
  capabilities?: RuntimeCapabilities;
}

export interface ForkRequest extends SandboxShapeRequest {
  /** Number of children, 1..100 (default 1). */
  n?: number;
  /** Children's names (length n); default: their ids. */
  names?: string[];
  /** When the source's REPL is busy: wait for it (default) or fail at once with `busy`. */
  wait?: boolean;
}

export interface SnapshotInfo {
  id: string;
  name: string;
  /** The sandbox it was taken from. */
  source: string;
  image: string;
  createdAt: string;
  /** True while the snapshot still holds a live copy of the REPL (restores bring Python state back). */
  pythonState: boolean;
  /**
   * Set when the live copy it held is gone, and why. That copy is a paused hidden sandbox (a fork of the
   * source): it lives only as long as its processes do — a host reboot, a daemon started without it, or
   * its PID 1 killed or its source's dying end it; the files stay.
   */
  pythonStateLost?: string;
  /** Number of read-only layers in its chain. */
  layers: number;
  /** Live sandboxes built on it (restored from it, or forked from those). */
  dependents: string[];
  /** How long the source's workload was frozen to take it (ms): on createSnapshot's result only. */
  pauseMs?: number;
}

export interface MergeResult {
  /** The parent, now running what was the winner. */
  sandbox: SandboxInfo;
  /** The winner's old id (an alias of the parent's from now on). */
  winner: string;
}

export interface ForkChildResult {
  ok: boolean;
  sandbox?: SandboxInfo;
  error?: { code: string; message: string };
}

export interface ForkResult {
  source: string;
  /** How long the source's workload was frozen (ms). */
  pauseMs: number;
  /** Time to freeze the source's files into a read-only layer (ms), part of pauseMs. */
  snapshotMs: number;
  driver: string;
  durationMs: number;
  /** What the children inherited. */
  /** `processes`: every process of the source runs on in each child (runtimes whose forks carry them). */
  carried: { filesystem: boolean; pythonState: boolean; processes: boolean; environment: boolean };
  /** What they did not, in words. */
  notCarried: string[];
  children: ForkChildResult[];
  /**
   * The source had a browser open: a live browser is not carried by a fork (Chromium is not the Python
   * interpreter), so each child's browser opened the source's page and replayed the actions taken on it
   * since (docs/BROWSER.md, "Forks").
   */
  browser?: {
    carried: 'replayed';
    url: string;
    actions: number;
    /** false: the source's history was longer than what is kept (BROWSER.replayActions); the rest was not replayed. */
    complete: boolean;
    children: BrowserReplay[];
  };
}

export interface BrowserReplay {
  id: string;
  ok: boolean;
  error?: string;
}

/** A terminal's size in character cells. */
export interface TtySize {
  rows: number;
  cols: number;
}

export interface ExecRequest {
  /** argv form; exactly one of argv / cmd. */
  argv?: string[];
  /** shell form, run with /bin/sh -c. */
  cmd?: string;
  cwd?: string;
  env?: Record<string, string>;
  /** Data written to stdin, then closed (sync exec). */
  stdin?: Buffer;
  timeoutSeconds?: number;
  /**
   * Inline output budget per stream (stdout and stderr each): a head and a tail of each stream are
   * returned, the middle is in a spool file inside the sandbox (see `streams`). Default: the daemon's
   * (1 MiB); background execs keep up to twice this of their latest output for polling.
   */
  maxOutputBytes?: number;
  /** Bytes of each stream kept in the spool file inside the sandbox (default: the daemon's, 256 MiB, at most a sixteenth of the sandbox's disk limit). */
  spoolBytes?: number;
  idempotencyKey?: string;
  /**
   * Run under a pseudo-terminal of this size (its controlling terminal): output comes as stdout (the
   * terminal's, with its escape sequences), stdin writes are keystrokes, resizeExec changes the size.
   */
  tty?: TtySize;
}

/** Options of calls that run work in a sandbox. */
export interface RunOptions {
  /**
   * Output chunks as they arrive: for an exec, the head of each stream, then (at the end) the marker line
   * and the tail: everything the inline result holds, in order.
   */
  onOutput?: (c: ExecOutputChunk) => void;
  /**
   * While a stream's output is past its head (an exec's or Python code's): its latest bytes, at most every
   * 2 s (for progress; not part of the result).
   */
  onPeek?: (p: ExecPeek) => void;
  /** The exec's id, as soon as it is recorded (before the command runs): to cancel or poll it by id. */
  onStarted?: (execId: string) => void;
  /**
   * Aborting it cancels the work: an exec's whole process tree; Python code by KeyboardInterrupt,
   * escalating to a restart of the REPL when it does not stop (the result then says its state was lost).
   */
  signal?: AbortSignal;
}

export interface ExecOutcome {
  execId: string;
  exitCode: number | null;
  signal: number | null;
  stdout: string;
  stderr: string;
  truncated: boolean;
  timedOut: boolean;
  oomKilled: boolean;
  cancelled: boolean;
  durationMs: number;
  /** What became of each stream when it was longer than the inline cap. */
  streams?: { stdout: StreamSummary; stderr: StreamSummary };
  /**
   * Processes the command left running (`server &`): they keep running; cancelExec on this exec ends
   * them. 0 after a timeout or cancel, which end the command's whole process tree.
   */
  leftovers: number;
}

/** Output a poller did not receive: dropped from the daemon's bounded copy, or skipped while it flooded. */
export interface MissedOutput {
  stream: 'stdout' | 'stderr';
  /** Stream offsets [from, to) not received; `from` is null when the poller's position is unknown. */
  from: number | null;
  to: number;
  /** to - from, when from is known. */
  bytes: number | null;
  /** The spool file inside the sandbox holding them (read it with an offset and length); null if none. */
  file: string | null;
}

export interface ExecPollResult {
  exec: ExecRecord;
  /** `offset`: where the chunk starts in its stream (gaps between a stream's chunks are in `missed`). */
  chunks: { seq: number; stream: 'stdout' | 'stderr'; data: string; offset?: number }[];
  nextSeq: number;
  done: boolean;
  /** Output between after_seq and these chunks that this poll cannot return. */
  missed: MissedOutput[];
}

/** `nodejs` is microsandbox's name for `node`. */
export type CodeLanguage = 'python' | 'bash' | 'node' | 'nodejs';

export interface CodeRunRequest {
  language?: CodeLanguage;
  code: string;
  timeoutSeconds?: number;
  maxOutputBytes?: number;
}

export interface SystemStatus {
  version: string;
  runtime: string;
  capabilities: RuntimeCapabilities;
  /** The runtimes a create may name (CreateSandboxRequest.runtime); the first is the default. */
  runtimes: RuntimeName[];
  stateDir: string;
  sandboxes: Record<string, number>;
  templates: number;
}

export interface DiskUsage {
  stateDir: string;
  images: { name: string; bytes: number }[];
  /** What each sandbox's dir holds (its own disk's files, where it has one). */
  sandboxes: { id: string; bytes: number }[];
  /** What the state dir takes on its filesystem (mounted disks counted once, as their image files). */
  totalBytes: number;
  /** The filesystem holding the state dir, when known. */
  filesystem?: {
    sizeBytes: number;
    /** Free for the daemon (not counting blocks reserved for root). */
    freeBytes: number;
    /** What live sandboxes' disk images may still take from it (kept free by admission). */
    promisedBytes: number;
  };
}

export interface GcReport {
  removedSandboxes: string[];
  removedMounts: string[];
  removedCgroups: string[];
  removedDirs: string[];
}

export interface ProgressEvent {
  phase: string;
  message: string;
  current?: number;
  total?: number;
}

export interface DiffRequest {
  /** Only report paths equal to or under one of these absolute paths (at most 64). */
  paths?: string[];
  /** Also return a unified text diff (A → B) of this file; each side is read up to 1 MiB. */
  unifiedFor?: string;
  /** Diff B's project against its host directory (A is not used); paths are then relative to it. */
  project?: boolean;
  /** With `project`: also return a `git apply`-able patch of every change. */
  patch?: boolean;
  /** Entries per answer, over added, removed, modified and renamed in that order (default 10,000; at most 50,000). */
  limit?: number;
  /** The `nextCursor` of the answer before: the next page of that diff (the other fields are not used). */
  cursor?: string;
}

/**
 * What changed between two sandboxes' filesystems, from their overlay layers (nothing runs inside).
 * added: in B, not in A; removed: in A, not in B; modified: in both but differing.
 */
export interface DiffResult extends LayerDiff {
  a: string;
  b: string;
  /** With `project` and `patch`: the changes as a patch for `git apply` in the host directory. */
  patch?: string;
  /** How many entries of each kind the whole diff has (the arrays hold one page of them). */
  counts?: { added: number; removed: number; modified: number; renamed: number };
  /** Where the next page starts (pass it as `cursor`), or null on the last page. */
  nextCursor?: string | null;
}

/** The API's commands (sync and background) and REPL calls: one group on every side that implements them. */
export type ExecApi = Pick<
  ForkboxApi,
  | 'exec'
  | 'startExec'
  | 'pollExec'
  | 'writeExecStdin'
  | 'resizeExec'
  | 'cancelExec'
  | 'listExecs'
  | 'runCode'
  | 'resetCode'
>;

export interface ForkboxApi {
  status(): Promise<SystemStatus>;

  /**
   * Create a sandbox. An image named by a registry reference is pulled on first use; `onProgress` is told
   * of that pull's phases and bytes (nothing else reports progress).
   */
  createSandbox(req: CreateSandboxRequest, opts?: CreateOptions): Promise<SandboxInfo>;
  /** `namespace`: one namespace, or `*` for all the caller may see (default: the caller's default namespace). */
  listSandboxes(opts?: {
    all?: boolean;
    labels?: Record<string, string>;
    namespace?: string;
  }): Promise<SandboxInfo[]>;
  getSandbox(idOrName: string, opts?: { usage?: boolean }): Promise<SandboxInfo>;
  /**
   * Kill a sandbox; with `cascade`, its descendants too (else they keep running). `namespace`: the
   * namespace a name is looked up in (default: the caller's; a `namespace/name` reference says it too).
   */
  killSandbox(idOrName: string, opts?: { cascade?: boolean; namespace?: string }): Promise<SandboxInfo>;
  pauseSandbox(idOrName: string): Promise<SandboxInfo>;
  resumeSandbox(idOrName: string): Promise<SandboxInfo>;
  extendSandbox(idOrName: string, ttlSeconds: number): Promise<SandboxInfo>;
  /** Freeze a sandbox's files and REPL under a name, to restore later (any number of times). */
  createSnapshot(idOrName: string, opts?: { name?: string }): Promise<SnapshotInfo>;
  listSnapshots(): Promise<SnapshotInfo[]>;
  getSnapshot(idOrName: string): Promise<SnapshotInfo>;
  /** Refused while sandboxes depend on it, unless `cascade` (which kills them). */
  deleteSnapshot(
    idOrName: string,
    opts?: { cascade?: boolean },
  ): Promise<{ deleted: string; killed: string[] }>;
  /** New sandboxes from a snapshot: its files, and its Python state while it holds one. */
  restoreSnapshot(idOrName: string, req?: ForkRequest): Promise<ForkResult>;
  /**
   * Keep a fork: `winner` (a descendant of `parent`) takes over the parent's id and name — its files,
   * processes and REPL answer under them from now on; the parent's old processes end; the winner's
   * old id stays as an alias of the parent's. Siblings are untouched.
   */
  mergeSandbox(parent: string, winner: string): Promise<MergeResult>;
  /** Branch a running sandbox into N children that inherit its files and live Python state. */
  forkSandbox(idOrName: string, req: ForkRequest): Promise<ForkResult>;

  /** Added, removed and modified paths between two live sandboxes, computed on the host from their layers. */
  diffSandboxes(a: string, b: string, opts?: DiffRequest): Promise<DiffResult>;
  /**
   * Write a sandbox's project changes back to its host directory; refused (nothing written) when the
   * host changed a changed path since the create. Host-side: served on the daemon's socket only.
   */
  applyProject(idOrName: string): Promise<ProjectApplyResult>;

  /**
   * Publish a server on the sandbox's loopback `port` on the host's 127.0.0.2 (`hostPort`, or a free one
   * when absent); the same port again returns its address.
   */
  exposePort(idOrName: string, port: number, opts?: { hostPort?: number }): Promise<PortInfo>;
  listPorts(idOrName: string): Promise<PortInfo[]>;
  /** A connection to a published port (the HTTP listener's /v1/sandboxes/{id}/ports/{port}/ proxy). */
  connectPort(idOrName: string, port: number): Promise<Duplex>;

  /** Run to completion; `opts.onOutput` streams chunks as they arrive; `opts.signal` cancels. */
  exec(idOrName: string, req: ExecRequest, opts?: RunOptions): Promise<ExecOutcome>;
  /** Start in the background; poll with pollExec. */
  startExec(idOrName: string, req: Omit<ExecRequest, 'stdin'> & { stdin?: boolean }): Promise<ExecRecord>;
  pollExec(
    idOrName: string,
    execId: string,
    opts?: { afterSeq?: number; waitMs?: number },
  ): Promise<ExecPollResult>;
  writeExecStdin(idOrName: string, execId: string, data: Buffer, eof?: boolean): Promise<void>;
  /** The terminal size of a running exec started with `tty`. */
  resizeExec(idOrName: string, execId: string, size: TtySize): Promise<void>;
  cancelExec(idOrName: string, execId: string): Promise<ExecRecord>;
  listExecs(idOrName: string): Promise<ExecRecord[]>;

  runCode(idOrName: string, req: CodeRunRequest, opts?: RunOptions): Promise<ReplResult>;
  resetCode(idOrName: string): Promise<void>;

  /** At most SIZES.fileBytes per call (`too_large` past it: read in parts with offset and length). */
  readFile(idOrName: string, path: string, opts?: FileReadOptions): Promise<FileRead>;
  writeFile(idOrName: string, path: string, data: Buffer, opts?: FileWriteOptions): Promise<FileWritten>;
  listFiles(
    idOrName: string,
    path: string,
    opts?: { recursive?: boolean },
  ): Promise<{ entries: FileEntry[]; truncated: boolean }>;
  statFile(idOrName: string, path: string): Promise<FileStat>;
  deleteFile(idOrName: string, path: string, opts?: { recursive?: boolean }): Promise<void>;
  mkdir(idOrName: string, path: string): Promise<void>;
  moveFile(idOrName: string, from: string, to: string, opts?: { overwrite?: boolean }): Promise<void>;

  /** Create or replace a named template config (host-wide: the local socket / default tenant only). */
  defineTemplate(req: DefineTemplateRequest): Promise<TemplateInfo>;
  /** 'default' first, then the defined ones by name. */
  listTemplates(): Promise<TemplateInfo[]>;
  /** Refused while live sandboxes were created from it (they are named). */
  deleteTemplate(name: string): Promise<{ deleted: string }>;

  listImages(): Promise<ImageRecord[]>;
  buildImage(
    req: { distro: 'debian'; suite?: string; packages?: string[]; name?: string; browser?: boolean },
    onProgress?: (e: ProgressEvent) => void,
  ): Promise<ImageRecord>;
  importImage(name: string, source: string, onProgress?: (e: ProgressEvent) => void): Promise<ImageRecord>;
  /** Pull a registry reference (`host:port/name:tag` or `…@sha256:…`) under the daemon's --image-allow list. */
  pullImage(ref: string, onProgress?: (e: ProgressEvent) => void): Promise<ImageRecord>;
  removeImage(name: string): Promise<void>;

  gc(): Promise<GcReport>;
  df(): Promise<DiskUsage>;

  /**
   * Act on the sandbox's browser (docs/BROWSER.md): `open` starts Chromium in the sandbox if none is open
   * and loads a URL; the other actions work on its page by the refs of the latest snapshot.
   */
  browser(idOrName: string, action: BrowserAction): Promise<BrowserResult>;
}

/** The sandbox part of the API: lifecycle, lineage, snapshots, diff (service/api-sandboxes.ts). */
export type SandboxApi = Pick<
  ForkboxApi,
  | 'status'
  | 'createSandbox'
  | 'listSandboxes'
  | 'getSandbox'
  | 'killSandbox'
  | 'forkSandbox'
  | 'mergeSandbox'
  | 'createSnapshot'
  | 'listSnapshots'
  | 'getSnapshot'
  | 'deleteSnapshot'
  | 'restoreSnapshot'
  | 'diffSandboxes'
  | 'applyProject'
  | 'exposePort'
  | 'listPorts'
  | 'connectPort'
  | 'pauseSandbox'
  | 'resumeSandbox'
  | 'extendSandbox'
>;
