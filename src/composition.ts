/**
 * The composition root: wires store, images, runtime and engine for one state dir. The CLI's `serve`
 * and in-process users (tests, benchmarks) open the engine here; nothing else constructs these parts.
 */

import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { createBrowsers } from './browser/browsers.ts';
import { parseDuration } from './domain/durations.ts';
import { ForkboxError } from './domain/errors.ts';
import { LIMITS } from './domain/limits.ts';
import type { RuntimeName } from './domain/runtime-id.ts';
import { type DiskSpec, parseDiskSpec } from './domain/sizes.ts';
import { createImageStore, type ImageStore } from './images/index.ts';
import { createEgressProxies, type EgressProxies } from './network/egress-proxies.ts';
import { createResolver, parseHostsMap } from './network/egress-resolve.ts';
import { installOpenFilter, openFilterTable, removeOpenFilter } from './network/open-filter.ts';
import { createOpenNats, type OpenNats } from './network/open-nat.ts';
import type { AuditLog } from './protocol/audit.ts';
import { gvisorPaths } from './runtimes/gvisor/gvisor-paths.ts';
import { createGvisorRuntime } from './runtimes/gvisor/gvisor-runtime.ts';
import { createRunsc } from './runtimes/gvisor/runsc.ts';
import { type AgentTimeouts, agentTimeoutsFromEnv } from './runtimes/native/agent-link/agent-timeouts.ts';
import { createInboxHub, type InboxHub } from './runtimes/native/agent-link/inbox-hub.ts';
import { type Cgroups, detectCgroups } from './runtimes/native/cgroups/index.ts';
import { installAgent } from './runtimes/native/container/agent-install.ts';
import { RUNTIME_IMAGE } from './runtimes/native/container/agent-runtime.ts';
import { createTemplates, type Templates } from './runtimes/native/container/templates.ts';
import { createAdmission } from './runtimes/native/host/admission.ts';
import { createFdBudget, type FdBudget } from './runtimes/native/host/fd-budget.ts';
import { type InboxFs, openInboxFs } from './runtimes/native/host/inbox-fs.ts';
import { createMounts, type Mounts } from './runtimes/native/host/mounts.ts';
import { type NativePaths, nativePaths } from './runtimes/native/host/paths.ts';
import { stateIdOf } from './runtimes/native/host/state-id.ts';
import { createSys, type Sys, socketFd } from './runtimes/native/host/sys.ts';
import type { UidRange } from './runtimes/native/host/uid-range.ts';
import {
  createUidRanges,
  DEFAULT_UID_REGISTRY,
  parseUidSpace,
  type UidRanges,
  type UidSpace,
} from './runtimes/native/host/uid-ranges.ts';
import { createHostMaintenance } from './runtimes/native/host-maintenance.ts';
import { type OpenedStorage, openStorage, type StorageMode } from './runtimes/native/layers/btrfs-storage.ts';
import type { SnapshotDriver } from './runtimes/native/layers/snapshot-driver.ts';
import { createNativeRuntime, type NativeRuntime } from './runtimes/native/native-runtime.ts';
import { createOomOrder, type OomOrder } from './runtimes/native/spawn/oom-order.ts';
import { createRuntimeRouter } from './runtimes/runtime-router.ts';
import type { ForkboxApi } from './service/api.ts';
import { createEngine, type Engine, type Logger } from './service/engine.ts';
import { createHostMetrics, type HostMetrics } from './service/host-metrics.ts';
import type { Runtime } from './service/ports.ts';
import { createRetention } from './service/retention.ts';
import { diskPolicy } from './service/sandboxes/disk-limits.ts';
import type { NetworkCap } from './service/sandboxes/network-cap.ts';
import { openSqliteStore, type SqliteStore } from './storage/sqlite/index.ts';
import { readMountInfo } from './util/mountinfo.ts';
import { which } from './util/subprocess.ts';
import { VERSION } from './version.ts';

export interface OpenEngineOptions {
  /** The runtime of creates that name none (`serve --runtime`; default native). */
  defaultRuntime?: RuntimeName;
  stateDir: string;
  log: Logger;
  /** How long to wait for sandboxes' agents to reconnect after a restart. */
  recoverDeadlineMs?: number;
  /** Python modules every template pre-imports. */
  prewarm?: string[];
  /** TTL reaper period; 0 disables it. */
  reapIntervalMs?: number;
  /** Storage driver; default FORKBOX_STORAGE, else auto (btrfs when usable, else copy). */
  storage?: StorageMode;
  /** Disk limit of sandboxes created without one; default FORKBOX_DISK_DEFAULT, else 10 GiB, 1,000,000 inodes. */
  diskDefault?: DiskSpec;
  /** Largest disk limit a sandbox may ask for; default FORKBOX_DISK_MAX, else 1 TiB, 100,000,000 inodes. */
  diskMax?: DiskSpec;
  /** Host directories a sandbox's project may be under (`--project-root`); default none: projects refused. */
  projectRoots?: string[];
  /** `--image-allow` patterns for pulls (images/registry/allow.ts); default none: only local callers pull. */
  imageAllow?: string[];
  /** How long ended sandboxes (and their execs) stay listed; default FORKBOX_RETENTION, else 24 h. 0 = not kept. */
  retentionSeconds?: number;
  /** Period of the retention sweep (output of ended sandboxes, pruning, vacuum); 0 disables it. Default 1 s. */
  retentionSweepMs?: number;
  /**
   * Exec output defaults per stream: inline budget and spool file inside the sandbox. Default
   * FORKBOX_EXEC_OUTPUT_BYTES / FORKBOX_EXEC_SPOOL_BYTES, else 1 MiB and 256 MiB (the spool at most a sixteenth of the sandbox's disk limit).
   */
  execOutput?: { outputBytes?: number; spoolBytes?: number };
  /** The cap on sandboxes' network policies (`--network-max`, `--network-allow`); default: any allow list. */
  networkCap?: NetworkCap;
  /** Where each egress proxy decision is written (the daemon's audit log); default: nowhere. */
  audit?: AuditLog;
  /** Sandboxes the warm pool keeps ready per template (`forkbox serve --pool`); default 0: off. */
  poolSize?: number;
}

/** `0`, or a duration (`24h`, `30m`), in seconds. */
/** The peer credentials (SO_PEERCRED) of a connection to the daemon's socket: its audited caller. */
export function socketPeerReader(): (socket: Socket) => { pid: number; uid: number; gid: number } {
  const sys = createSys();
  return (socket) => sys.peerCred(socketFd(socket));
}

export function parseRetention(text: string): number {
  return text.trim() === '0' ? 0 : parseDuration(text);
}

/** A disk setting from the options, else from its environment variable. */
function diskSetting(given: DiskSpec | undefined, env: string): DiskSpec | undefined {
  if (given) return given;
  const text = process.env[env];
  if (text === undefined || text.trim() === '') return undefined;
  try {
    return parseDiskSpec(text);
  } catch (e) {
    throw new ForkboxError('invalid_argument', `${env}: ${(e as Error).message}`);
  }
}

/** A positive integer from the environment, else undefined (an invalid value is an error naming it). */
function envBytes(name: string, max: number): number | undefined {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0 || n > max)
    throw new ForkboxError(
      'invalid_argument',
      `${name}=${v} is not a byte count from 0 to ${max}; fix or unset it.`,
    );
  return n;
}

export interface OpenedEngine {
  api: ForkboxApi;
  engine: Engine;
  /** The gvisor runtime, when runsc is installed (tests run the Runtime contract on it directly). */
  gvisor?: Runtime;
  /** The native runtime under the engine (tests run the Runtime contract on it directly). */
  runtime: Runtime;
  stateDir: string;
  /** What the runtime refused and the daemon's file descriptors (served on /metrics). */
  metrics: HostMetrics;
  close(opts?: { killSandboxes?: boolean }): Promise<void>;
}

function lockStateDir(stateDir: string, sys: Sys): number {
  const lockPath = join(stateDir, 'lock');
  const fd = openSync(lockPath, 'a+', 0o600);
  if (!sys.tryLockExclusive(fd)) {
    closeSync(fd);
    let holder = '';
    try {
      holder = readFileSync(`${lockPath}.pid`, 'utf8').trim();
    } catch {
      // unknown
    }
    throw new ForkboxError(
      'busy',
      `another forkbox process${holder ? ` (pid ${holder})` : ''} owns the state dir ${stateDir}. Use it through its socket (the CLI does this by default), or stop it first.`,
      { stateDir },
    );
  }
  writeFileSync(`${lockPath}.pid`, String(process.pid));
  return fd;
}

/** The daemon process's own parts: its file descriptor budget, its OOM ranking, its host metrics. */
interface DaemonProcess {
  fds: FdBudget;
  oom: OomOrder;
  metrics: HostMetrics;
}

/**
 * What the daemon process itself needs before it makes sandboxes: all the file descriptors it may have
 * (RLIMIT_NOFILE soft = hard) with a reserve kept (host/fd-budget.ts), its own anonymous session keyring
 * (templates are started without one of their own: container/template-start.ts), its OOM rank.
 */
function prepareProcess(sys: Sys, log: Logger): DaemonProcess {
  let limit = Number.POSITIVE_INFINITY;
  try {
    limit = sys.raiseNofileLimit().soft;
  } catch (e) {
    log.warn({ err: String(e) }, 'could not raise the open-files limit');
  }
  const fds = createFdBudget({ limit });
  try {
    sys.joinAnonymousSessionKeyring();
  } catch (e) {
    log.warn({ err: String(e) }, 'could not give the daemon its own session keyring');
  }
  const oom = createOomOrder({ log });
  oom.exemptDaemon(process.pid);
  const metrics = createHostMetrics({ fds: () => fds.usage() });
  return { fds, oom, metrics };
}

function envNumber(name: string): number | undefined {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0)
    throw new ForkboxError('invalid_argument', `${name} must be a non-negative number, not '${v}'.`);
  return n;
}

/** The state dir's database, warning in the log when a full disk used up its reserve. */
function openStore(stateDir: string, log: Logger): SqliteStore {
  return openSqliteStore({
    path: join(stateDir, 'forkbox.db'),
    onReserveReleased: () =>
      log.warn(
        `the disk holding ${stateDir} is full: forkbox used its database reserve to record this call. Kill sandboxes and delete snapshots you no longer need; 'forkbox gc' makes the reserve again once there is room.`,
      ),
  });
}

/** Admission by real use (host/admission.ts), its knobs from the environment. */
function admissionFromEnv(paths: NativePaths, cgroups: Cgroups, metrics: HostMetrics) {
  const perSandboxMb = envNumber('FORKBOX_ADMIT_SANDBOX_MB');
  const minAvailableMb = envNumber('FORKBOX_MIN_AVAILABLE_MB');
  const maxPressure = envNumber('FORKBOX_MAX_MEMORY_PRESSURE');
  const ratio = envNumber('FORKBOX_OVERCOMMIT_RATIO');
  return createAdmission({
    hostMemoryBytes: totalmem(),
    minFreeDiskBytes: 256 * 1024 * 1024,
    stateDir: paths.stateDir,
    ...(ratio === undefined ? {} : { overcommitRatio: ratio }),
    ...(perSandboxMb === undefined ? {} : { perSandboxBytes: perSandboxMb * 2 ** 20 }),
    ...(minAvailableMb === undefined ? {} : { minAvailableBytes: minAvailableMb * 2 ** 20 }),
    ...(maxPressure === undefined ? {} : { maxPressure }),
    sandboxesUseBytes: async () => (await cgroups.stats(paths.sandboxCgroups)).memoryBytes,
    onRefused: (reason) => metrics.admissionRefused(reason),
  });
}

function execSettingsFrom(o: OpenEngineOptions['execOutput']): { outputBytes?: number; spoolBytes?: number } {
  const out: { outputBytes?: number; spoolBytes?: number } = {};
  const outputBytes = o?.outputBytes ?? envBytes('FORKBOX_EXEC_OUTPUT_BYTES', LIMITS.maxOutputBytes.max);
  const spoolBytes = o?.spoolBytes ?? envBytes('FORKBOX_EXEC_SPOOL_BYTES', LIMITS.spoolBytes.max);
  if (outputBytes !== undefined) out.outputBytes = outputBytes;
  if (spoolBytes !== undefined) out.spoolBytes = spoolBytes;
  return out;
}

/**
 * The daemon's periodic work: the TTL reaper and the retention sweep (output of ended sandboxes, pruning,
 * vacuum). Returns the function that stops both.
 */
function startHousekeeping(
  engine: Engine,
  store: SqliteStore,
  log: Logger,
  opts: Pick<OpenEngineOptions, 'reapIntervalMs' | 'retentionSeconds' | 'retentionSweepMs'>,
): () => void {
  const period = opts.reapIntervalMs ?? 1000;
  const timer =
    period > 0
      ? setInterval(() => {
          engine.reapExpired().catch((e: unknown) => log.warn({ err: String(e) }, 'TTL reaper failed'));
        }, period)
      : null;
  timer?.unref();
  const retentionEnv = process.env.FORKBOX_RETENTION;
  const retentionSeconds =
    opts.retentionSeconds ??
    (retentionEnv === undefined || retentionEnv.trim() === '' ? undefined : parseRetention(retentionEnv));
  const retention = createRetention({
    store,
    log,
    ...(retentionSeconds === undefined ? {} : { retentionMs: retentionSeconds * 1000 }),
  });
  const sweepMs = opts.retentionSweepMs ?? 1000;
  const sweeper =
    sweepMs > 0
      ? setInterval(() => {
          try {
            retention.sweep();
          } catch (e) {
            log.warn({ err: String(e) }, 'retention sweep failed');
          }
        }, sweepMs)
      : null;
  sweeper?.unref();
  return () => {
    if (timer) clearInterval(timer);
    if (sweeper) clearInterval(sweeper);
  };
}

/**
 * The cap with what `open` lacks on this daemon. Only a daemon capped at `open` touches the host filter:
 * it installs (replaces) its nftables table for the sandboxes' uid range and verifies it
 * (network/open-filter.ts); only then may the runtime start user-mode NATs (network/open-nat.ts).
 */
async function openNetworkCap(
  cap: NetworkCap | undefined,
  table: string,
  ranges: { hostStart: number; size: number }[],
  nat: OpenNats | undefined,
  log: Logger,
): Promise<NetworkCap | undefined> {
  if (cap?.max !== 'open' || !nat) return cap;
  const state = await installOpenFilter({ table, ranges });
  if (!state.ok) {
    log.warn({ missing: state.missing }, 'open network refused: the host filter is not in place');
    nat.setMissing(state.missing);
    return { ...cap, openMissing: state.missing };
  }
  log.info({ ranges: ranges.map((r) => `${r.hostStart}+${r.size}`) }, 'open network host filter installed');
  nat.setMissing(undefined);
  return cap;
}

/**
 * The state dir's modes (docs/SECURITY.md, "Host users"): the state dir and `templates/` 0711 — a
 * template's runc walks to its root filesystem as that template's root user, and each template's own
 * directory admits only its group — and everything else that holds sandbox data 0700, so no other host
 * user lists, enters or reads any of it. Set on every start: a state dir made by an older forkbox had
 * 0711 and 0755 directories.
 */
function closeStateDir(stateDir: string): void {
  for (const d of ['templates']) {
    mkdirSync(join(stateDir, d), { recursive: true, mode: 0o711 });
    chmodSync(join(stateDir, d), 0o711);
  }
  for (const d of [
    'sandboxes',
    'inbox',
    'agent',
    'layers',
    'images',
    'tmp',
    'disks',
    'projects',
    'runc',
    'browsers',
  ]) {
    mkdirSync(join(stateDir, d), { recursive: true, mode: 0o700 });
    chmodSync(join(stateDir, d), 0o700);
  }
}

/**
 * The parent of this state dir's sandbox cgroups, 0700 in every hierarchy it is in: another host user does
 * not list which sandboxes there are (the tree is world-readable by default).
 */
async function closeSandboxCgroups(cgroups: Cgroups, rel: string): Promise<void> {
  await cgroups.create(rel);
  for (const m of readMountInfo()) {
    if (m.fsType !== 'cgroup' && m.fsType !== 'cgroup2') continue;
    const dir = join(m.mountPoint, rel);
    if (existsSync(dir)) chmodSync(dir, 0o700);
  }
}

/** The native runtime needs root on Linux: anything else is refused before the state dir is touched. */
function requireRootOnLinux(): void {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) {
    throw new ForkboxError(
      'requirement_missing',
      'the native runtime needs root on Linux (it creates user namespaces, overlay mounts and cgroups). Run forkbox as root, e.g. `sudo forkbox serve`.',
    );
  }
}

/** The daemon's umask, and the state dir itself (made if missing). */
function prepareStateDir(stateDir: string): void {
  // Every mode forkbox sets is meant as written: a daemon started under `umask 077` made inbox and agent
  // directories the sandboxes' root could not enter, and every create timed out. Modes that matter are
  // also set with chmod where they are made.
  process.umask(0o022);
  // 0711: the mapped sandbox root (an unprivileged host uid) must traverse the state dir to reach the
  // template bundles runc starts, but may not list it.
  mkdirSync(stateDir, { recursive: true, mode: 0o711 });
  chmodSync(stateDir, 0o711);
}

/** What a failed open must close again, set as each is opened. */
interface Opened {
  storage: OpenedStorage | null;
  inboxFs: InboxFs | null;
}

/** Where sandboxes live on this host: the ids they run as and the state dir's paths. */
interface HostLayout {
  /** The ids layers are stored with on disk. */
  uidRange: UidRange;
  /** The host uids sandboxes' ranges are taken from. */
  space: UidSpace;
  ranges: UidRanges;
  stateId: string;
  paths: NativePaths;
}

/** What the runtime's sandboxes share: the host layout, images, cgroups, sockets, templates, storage. */
interface HostParts extends HostLayout {
  images: ImageStore;
  cgroups: Cgroups;
  mounts: Mounts;
  hub: InboxHub;
  timeouts: AgentTimeouts;
  templates: Templates;
  snapshots: SnapshotDriver;
}

function hostLayout(stateDir: string, sys: Sys): HostLayout {
  // The ids layers are stored with on disk (container id N = host id 100000 + N); sandboxes run as ids
  // of their own (host/uid-ranges.ts), through which every layer is idmapped.
  const uidRange = { hostStart: 100000, size: 65536 };
  const space = parseUidSpace(process.env.FORKBOX_UID_SPACE);
  const ranges = createUidRanges({
    sys,
    dir: process.env.FORKBOX_UID_REGISTRY ?? DEFAULT_UID_REGISTRY,
    space,
  });
  const stateId = stateIdOf(stateDir);
  const paths = nativePaths(stateDir, stateId);
  closeStateDir(stateDir);
  return { uidRange, space, ranges, stateId, paths };
}

/** The host's parts, opened in order; what a failure must close again is set in `opened` as it is opened. */
async function openHostParts(
  opts: OpenEngineOptions,
  sys: Sys,
  host: DaemonProcess,
  store: SqliteStore,
  opened: Opened,
): Promise<HostParts> {
  const { stateDir, log } = opts;
  const layout = hostLayout(stateDir, sys);
  const images = createImageStore({
    stateDir,
    uidShift: layout.uidRange,
    log,
    env: process.env,
    ...(opts.imageAllow ? { imageAllow: opts.imageAllow } : {}),
  });
  // Layers made before builds dropped device nodes lose theirs now (once each: docs/IMAGES.md).
  await images.sweepDeviceNodes?.();
  const cgroups = detectCgroups();
  await closeSandboxCgroups(cgroups, layout.paths.sandboxCgroups);
  const mounts = createMounts(sys);
  opened.inboxFs = openInboxFs({ dir: join(stateDir, 'inbox'), sys, mounts, log });
  const hub = createInboxHub({ sys, log, counters: host.metrics });
  const timeouts = agentTimeoutsFromEnv(process.env);
  const templates = createTemplates({
    paths: layout.paths,
    mounts,
    hub,
    store,
    log,
    uidRange: layout.uidRange,
    ranges: layout.ranges,
    runc: process.env.FORKBOX_RUNC ?? 'runc',
    prewarm: opts.prewarm ?? [],
    timeouts,
    exemptFromOom: (pid) => host.oom.exemptTemplate(pid),
    runtimeImage: () => images.get(RUNTIME_IMAGE),
    ...(process.env.FORKBOX_TEMPLATE_START_TIMEOUT_MS
      ? { startTimeoutMs: Number(process.env.FORKBOX_TEMPLATE_START_TIMEOUT_MS) }
      : {}),
  });
  // FORKBOX_STORAGE=btrfs|copy|auto; the choice and its reason are logged (and shown by `forkbox doctor`).
  const storage = openStorage({
    stateDir,
    sys,
    mounts,
    log,
    env: opts.storage ? { ...process.env, FORKBOX_STORAGE: opts.storage } : process.env,
  });
  opened.storage = storage;
  return { ...layout, images, cgroups, mounts, hub, timeouts, templates, snapshots: storage.driver };
}

/** The egress proxies of sandboxes with an allow list; every decision is counted and audited. */
function egressProxies(opts: OpenEngineOptions, host: DaemonProcess, store: SqliteStore): EgressProxies {
  return createEgressProxies({
    resolve: createResolver(
      process.env.FORKBOX_EGRESS_HOSTS ? parseHostsMap(process.env.FORKBOX_EGRESS_HOSTS) : undefined,
    ),
    onDecision(d) {
      host.metrics.egressDecision?.(d.decision);
      opts.audit?.write({
        door: 'egress',
        tenant: store.getSandbox(d.sandbox)?.tenant ?? '?',
        route: 'egress',
        sandbox: d.sandbox,
        host: d.host,
        port: d.port,
        outcome: d.decision,
        status: d.decision === 'accepted' ? 200 : 403,
        durationMs: 0,
      });
    },
  });
}

/** The native runtime on the host's parts, and the user-mode NATs of `open` sandboxes when capped at open. */
function nativeRuntime(
  opts: OpenEngineOptions,
  sys: Sys,
  host: DaemonProcess,
  store: SqliteStore,
  parts: HostParts,
): { runtime: NativeRuntime; nat: OpenNats | undefined } {
  const { log } = opts;
  const { paths, cgroups, uidRange } = parts;
  const egress = egressProxies(opts, host, store);
  // `open` sandboxes' NATs run as the sandboxes' root host uid, which the host filter judges.
  const nat = opts.networkCap?.max === 'open' ? createOpenNats({ uid: uidRange.hostStart, log }) : undefined;
  const runtime = createNativeRuntime({
    sys,
    egress,
    ...(nat ? { nat } : {}),
    onPortConnection(ev) {
      host.metrics.portConnection?.(ev.decision);
      opts.audit?.write({
        door: 'port',
        tenant: store.getSandbox(ev.sandbox)?.tenant ?? '?',
        route: ev.via,
        sandbox: ev.sandbox,
        port: ev.port,
        outcome: ev.decision,
        status: ev.decision === 'accepted' ? 200 : 503,
        durationMs: 0,
      });
    },
    snapshots: parts.snapshots,
    pinnedLayers: () => store.listSnapshots().flatMap((s) => s.layers),
    paths,
    mounts: parts.mounts,
    cgroups,
    hub: parts.hub,
    templates: parts.templates,
    images: parts.images,
    log,
    uidRange,
    timeouts: parts.timeouts,
    oom: host.oom,
    fds: host.fds,
    counters: host.metrics,
    admission: admissionFromEnv(paths, cgroups, host.metrics),
    // How long a new sandbox may take to greet the host and set itself up (default 10 s). A child that
    // dies on the way is reported at once, whatever this is (spawn/unborn-watch.ts).
    ...(process.env.FORKBOX_SANDBOX_START_TIMEOUT_MS
      ? { createTimeoutMs: Number(process.env.FORKBOX_SANDBOX_START_TIMEOUT_MS) }
      : {}),
  });
  return { runtime, nat };
}

/**
 * The gvisor runtime, when runsc is installed (FORKBOX_RUNSC names another binary; `--runtime` and
 * `runtime: "gvisor"` then work) — else none, and a create that names it says how to install it.
 */
function gvisorRuntime(opts: OpenEngineOptions, sys: Sys, parts: HostParts): Runtime | undefined {
  const bin = process.env.FORKBOX_RUNSC ?? which('runsc');
  if (!bin) return undefined;
  const paths = gvisorPaths(opts.stateDir, parts.stateId);
  return createGvisorRuntime({
    runsc: createRunsc({ bin, root: paths.runscRoot }),
    paths,
    sys,
    hub: parts.hub,
    cgroups: parts.cgroups,
    cgroupParent: `${parts.paths.stateCgroup}/gvisor`,
    images: parts.images,
    agentDir: () => installAgent(parts.paths).dir,
    log: opts.log,
    timeouts: parts.timeouts,
  });
}

/** The engine over the runtime, with the disk policy and the network cap of this daemon. */
async function buildEngine(
  opts: OpenEngineOptions,
  store: SqliteStore,
  parts: HostParts,
  runtime: Runtime,
  nat: OpenNats | undefined,
): Promise<{ engine: Engine; networkCap: NetworkCap | undefined; filterTable: string }> {
  const { stateDir, log } = opts;
  const { paths, mounts, cgroups, images, snapshots, uidRange, space } = parts;
  const maintenance = createHostMaintenance({ paths, mounts, cgroups, images, snapshots });
  const disk = diskPolicy({
    enforced: snapshots.diskLimits.enforced,
    defaults: diskSetting(opts.diskDefault, 'FORKBOX_DISK_DEFAULT'),
    max: diskSetting(opts.diskMax, 'FORKBOX_DISK_MAX'),
  });
  const filterTable = openFilterTable(parts.stateId);
  // Sandboxes (and their NATs) run as ids of the space; those made before it, as the stored ids.
  const sandboxIds = [uidRange, { hostStart: space.start, size: space.end - space.start }];
  const networkCap = await openNetworkCap(opts.networkCap, filterTable, sandboxIds, nat, log);
  const engine = createEngine({
    disk,
    browsers: createBrowsers({ dir: join(stateDir, 'browsers'), log }),
    agentRuntimeImage: RUNTIME_IMAGE,
    ...(networkCap ? { networkCap } : {}),
    ...(opts.projectRoots ? { projectRoots: opts.projectRoots } : {}),
    store,
    runtime,
    images,
    stateDir,
    version: VERSION,
    log,
    diskUsage: maintenance.diskUsage,
    // After a gc, the database's disk reserve is made again if a full disk used it up and there is room.
    hostGc: (keep, ours) => maintenance.gc(keep, ours).finally(() => store.ensureDiskReserve()),
    execSettings: execSettingsFrom(opts.execOutput),
    ...(opts.poolSize === undefined ? {} : { poolSize: opts.poolSize }),
  });
  return { engine, networkCap, filterTable };
}

/** An opened engine's `close`: the first call stops it all, in order; later calls do nothing. */
function closeOpened(o: {
  engine: Engine;
  /** Every runtime (the router): shut down together. */
  runtime: Runtime;
  native: NativeRuntime;
  store: SqliteStore;
  snapshots: SnapshotDriver;
  inboxFs: InboxFs | null;
  stopHousekeeping: () => void;
  networkCap: NetworkCap | undefined;
  filterTable: string;
  lockFd: number;
}): OpenedEngine['close'] {
  const { engine, runtime, native, store, snapshots, inboxFs, networkCap } = o;
  let closed = false;
  return async (closeOpts) => {
    if (closed) return;
    closed = true;
    o.stopHousekeeping();
    if (closeOpts?.killSandboxes) {
      // Every tenant's, snapshot holders included; deepest first so no PID 1 is left as a tombstone.
      const live = store
        .listSandboxes({ states: ['creating', 'running', 'paused', 'killing'] })
        .sort((x, y) => y.depth - x.depth);
      for (const r of live) {
        await engine
          .scoped({ tenant: r.tenant })
          .killSandbox(r.id, { cascade: true })
          .catch(() => undefined);
      }
    }
    await engine.close();
    await runtime.shutdown({ killSandboxes: closeOpts?.killSandboxes === true });
    // Sandboxes that outlive this process (a daemon restart) keep their storage mounted.
    const inUse = closeOpts?.killSandboxes !== true && native.live.size > 0;
    await snapshots.close({ inUse });
    // Templates' inboxes are in it too: it goes only when the templates went with the sandboxes.
    inboxFs?.close({ inUse: closeOpts?.killSandboxes !== true });
    store.close();
    // Only a daemon capped at open installed the table (openNetworkCap); a clean stop takes it away.
    if (networkCap?.max === 'open') await removeOpenFilter(o.filterTable);
    closeSync(o.lockFd);
  };
}

export async function openEngine(opts: OpenEngineOptions): Promise<OpenedEngine> {
  requireRootOnLinux();
  const { stateDir, log } = opts;
  prepareStateDir(stateDir);
  const sys = createSys();
  const lockFd = lockStateDir(stateDir, sys);
  const host = prepareProcess(sys, log);
  const store = openStore(stateDir, log);
  const opened: Opened = { storage: null, inboxFs: null };
  try {
    const parts = await openHostParts(opts, sys, host, store, opened);
    const { runtime: native, nat } = nativeRuntime(opts, sys, host, store, parts);
    const gvisor = gvisorRuntime(opts, sys, parts);
    if (opts.defaultRuntime === 'gvisor' && !gvisor)
      throw new ForkboxError(
        'requirement_missing',
        "the default runtime is gvisor but runsc is not installed: run `npm run setup` as root (it installs runsc from Debian's backports), or serve without --runtime gvisor.",
      );
    const runtime = createRuntimeRouter({
      native,
      ...(gvisor ? { gvisor } : {}),
      ...(opts.defaultRuntime ? { defaultRuntime: opts.defaultRuntime } : {}),
    });
    const { engine, networkCap, filterTable } = await buildEngine(opts, store, parts, runtime, nat);
    await engine.recover(opts.recoverDeadlineMs ?? 5000);
    const stopHousekeeping = startHousekeeping(engine, store, log, opts);
    return {
      api: engine,
      engine,
      runtime: native,
      ...(gvisor ? { gvisor } : {}),
      stateDir,
      metrics: host.metrics,
      close: closeOpened({
        engine,
        runtime,
        native,
        store,
        snapshots: parts.snapshots,
        inboxFs: opened.inboxFs,
        stopHousekeeping,
        networkCap,
        filterTable,
        lockFd,
      }),
    };
  } catch (e) {
    await opened.storage?.driver.close({ inUse: true }).catch(() => undefined);
    opened.inboxFs?.close({ inUse: true });
    store.close();
    closeSync(lockFd);
    throw e;
  }
}
