/** Core records shared by every layer. Plain data: no behaviour, no I/O. */
import type { NetworkPolicy } from './network.ts';

export type SandboxState = 'creating' | 'running' | 'paused' | 'killing' | 'killed' | 'failed' | 'lost';

export interface Limits {
  /** Hard memory limit in bytes (no swap). */
  memoryBytes: number;
  /** Maximum number of processes/threads. */
  pids: number;
  /** CPU quota in CPUs (e.g. 1.5 = 150% of one core). */
  cpus: number;
  /**
   * Bytes the sandbox may store of its own writes (its files' data and metadata); 0 = not limited (a
   * sandbox made before disk limits existed, or storage that cannot limit: docs/STORAGE.md).
   */
  diskBytes: number;
  /**
   * Files, directories and other inodes it may create; 0 = not limited. Exact on the copy driver; on
   * btrfs inodes are bounded through diskBytes, each one's metadata counting against it (docs/STORAGE.md).
   */
  diskInodes: number;
}

export const DEFAULT_LIMITS: Limits = {
  memoryBytes: 1024 * 1024 * 1024,
  pids: 512,
  cpus: 1,
  diskBytes: 10 * 1024 ** 3,
  diskInodes: 1_000_000,
};

export interface SandboxRecord {
  id: string;
  name: string;
  state: SandboxState;
  image: string;
  templateId: string;
  parentId: string | null;
  depth: number;
  limits: Limits;
  env: Record<string, string>;
  labels: Record<string, string>;
  /** Epoch ms after which the sandbox is reaped; null = no TTL. */
  expiresAt: number | null;
  createdAt: number;
  updatedAt: number;
  /** Host pid of the sandbox's PID 1 (its agent), when known. */
  hostPid: number | null;
  /** Free-form runtime data (paths, cgroup names); opaque to the service layer. */
  runtime: Record<string, unknown>;
  /** Why the sandbox ended, when it has. */
  endReason: string | null;
  /** The tenant that owns it: it is invisible to every other tenant. */
  tenant: string;
  /** Its namespace within the tenant (domain/namespace.ts); its name is unique there. Forks inherit it. */
  namespace: string;
  /** The client session it belongs to: it is killed when that session ends. Null = persistent. */
  session: string | null;
  /** Its network policy (domain/network.ts); forks and restores inherit it. */
  network: NetworkPolicy;
  /** Its published ports: a server on `port` in the sandbox's loopback, reachable on host `hostPort`. */
  ports?: PublishedPort[];
}

/** A port published from a sandbox's loopback to the host's 127.0.0.2. */
export interface PublishedPort {
  port: number;
  hostPort: number;
}

export type TemplateState = 'starting' | 'running' | 'stopped' | 'failed';

export interface TemplateRecord {
  id: string;
  image: string;
  /** Hash of the template config (image + prewarm + uid range). */
  configKey: string;
  state: TemplateState;
  hostPid: number | null;
  createdAt: number;
  runtime: Record<string, unknown>;
}

export type ExecState =
  | 'running'
  | 'exited'
  | 'killed'
  | 'timed_out'
  | 'cancelled'
  | 'interrupted'
  | 'failed';

export interface ExecRecord {
  id: string;
  sandboxId: string;
  idempotencyKey: string | null;
  command: string[];
  state: ExecState;
  exitCode: number | null;
  signal: number | null;
  timedOut: boolean;
  truncated: boolean;
  oomKilled: boolean;
  startedAt: number;
  endedAt: number | null;
  /**
   * Processes of the exec still running when it ended (a normal exit that left `server &` behind); they
   * keep running until they exit or the exec is cancelled. 0 while running and after a kill.
   */
  leftovers: number;
  /** The runtime's name for the exec's process tree, while processes may be left in it; else null. */
  tree: string | null;
  /** What became of each output stream, once it ended (null before, and for older records). */
  streams: { stdout: StreamSummary; stderr: StreamSummary } | null;
}

/**
 * What became of one output stream of an exec or a REPL call. Inline, a result carries the stream's
 * head and tail (bounded by the call's max_output_bytes); when the middle was cut, the whole stream is
 * kept in a file inside the sandbox (up to a spool cap), readable in pages.
 */
export interface StreamSummary {
  /** Bytes the program wrote to the stream. */
  totalBytes: number;
  /** Bytes of it in the inline result (head + tail). */
  shownBytes: number;
  /** totalBytes - shownBytes: what the inline result leaves out. */
  omittedBytes: number;
  /** Path inside the sandbox holding the whole stream, when something was left out; else null. */
  file: string | null;
  /** Bytes kept in `file` (less than totalBytes when the spool reached its cap). */
  spooledBytes: number;
}

/** A named, frozen state of a sandbox: its files (a read-only layer chain) and, while its holder lives, its REPL. */
export interface SnapshotRecord {
  id: string;
  name: string;
  tenant: string;
  /** The namespace of the sandbox it was taken from: only callers that may act there see it. */
  namespace: string;
  /** The sandbox it was taken from (may be gone since). */
  sourceId: string;
  image: string;
  templateId: string;
  /** Read-only layer directories, newest first: what a restored sandbox stacks its upper on. */
  layers: string[];
  /** The paused hidden sandbox holding the live REPL copy; null once it is gone (state lost). */
  holderId: string | null;
  limits: Limits;
  env: Record<string, string>;
  /** The source's published ports (sandbox-side numbers) when it was taken: restores publish them anew. */
  ports: number[];
  createdAt: number;
}

export interface ImageRecord {
  name: string;
  /** Content key: same inputs → same id (builds and imports are cached by it). */
  id: string;
  /** Absolute paths of the read-only layer directories, newest first (overlay lowerdir order). */
  layers: string[];
  createdAt: number;
  sizeBytes: number;
  /** Where the image came from: "debootstrap:bookworm", "import:<path>". */
  source: string;
  /** Default environment for processes in sandboxes of this image. */
  env: Record<string, string>;
  /** Path of python3 inside the image, if any (the native runtime needs one). */
  python: string | null;
  /** Pulled images: the canonical registry reference and the manifest digest it resolved to. */
  ref?: string;
  digest?: string;
  /** Pulled images: the image config's WorkingDir, User, Entrypoint and Cmd (Env is in `env`). */
  config?: {
    workingDir: string | null;
    user: string | null;
    entrypoint: string[] | null;
    cmd: string[] | null;
  };
}
