/**
 * An in-memory Runtime for fast tests of the service layer and the transports: no root, no processes,
 * no kernel. It follows the contract the native runtime follows (test/contract/runtime-contract.ts runs
 * against both): sandboxes with their own files, environment, commands and a REPL namespace; forks that
 * copy files and REPL state of one instant and freeze the source's writable layer into a read-only
 * one; tombstones (keepInit) for parents whose children still live; pause/resume; recovery of what it
 * still holds. It lives under test/ because it isolates nothing: it is a double, not a runtime to ship.
 */
import { randomBytes } from 'node:crypto';
import { errors, ForkboxError } from '../../../src/domain/errors.ts';
import { type RuntimeName, runtimeId, runtimeKind } from '../../../src/domain/runtime-id.ts';
import type { ImageRecord, SandboxRecord } from '../../../src/domain/types.ts';
import type {
  CreateSandboxSpec,
  ExecHandle,
  ExecResult,
  ForkChildSpec,
  ForkOutcome,
  LayerChain,
  Runtime,
  RuntimeCapabilities,
  SandboxHandle,
} from '../../../src/service/ports.ts';
import { createKeyedQueue } from '../../../src/util/keyed-queue.ts';
import { startFakeExec } from './fake-exec.ts';
import { FakeFs } from './fake-fs.ts';
import { diffFakeLayers } from './fake-layers.ts';
import { FakeRepl } from './fake-repl.ts';
import { builtinPrograms, type Program } from './fake-shell.ts';

export interface FakeSandbox {
  rid: string;
  hostPid: number;
  fs: FakeFs;
  repl: FakeRepl;
  env: Record<string, string>;
  templateId: string;
  depth: number;
  lowers: string[];
  /** The runtime it was made by when a create named one (its forks inherit it); absent: native. */
  kind?: RuntimeName;
  paused: boolean;
  tombstone: boolean;
  /** Set when its PID 1 died (crash): every call fails with sandbox_gone. */
  dead: string | null;
  kills: Set<(e: ForkboxError) => void>;
}

export interface FakeRuntime extends Runtime {
  /** Live (and tombstoned) sandboxes by runtime id. */
  readonly sandboxes: Map<string, FakeSandbox>;
  /** Read-only layers frozen by forks: a full view of the files at that instant. */
  readonly layers: Map<string, FakeFs>;
  /** Programs sandboxes can run, by argv[0]; tests add their own. */
  readonly programs: Map<string, Program>;
  /** Every call the service made, in order (method name and sandbox runtime id). */
  /**
   * Every runtime call; a create also names the group (tenant) its template must belong to, and the
   * runtime it asked for (CreateSandboxSpec.runtime) when it named one.
   */
  readonly calls: FakeRuntimeCall[];
  /** A sandbox's PID 1 dies: running execs fail and every later call says sandbox_gone. */
  crash(rid: string, reason?: string): void;
  /** Make the next createSandbox/forkSandbox child with this name fail with `error`. */
  failNext(name: string, error: string): void;
}

export interface FakeRuntimeCall {
  op: string;
  rid?: string;
  group?: string;
  runtime?: RuntimeName;
}

export interface FakeRuntimeOptions {
  images?: { require(name: string): ImageRecord };
  /** Whether forks carry the REPL namespace (the native runtime's forkProcessState). Default true. */
  forkProcessState?: boolean;
  /**
   * Offer reviveSandbox: a crashed sandbox comes back with its files and a fresh REPL (the native
   * runtime's revival after a reboot). Default off: a crashed sandbox is then lost.
   */
  revive?: boolean;
  /**
   * The runtimes a create may name (Runtime.runtimes), each with what differs from the fake's own
   * capabilities. Default: native only. A sandbox's runtime (runtimeOf) is its record's `runtime.kind`.
   */
  runtimes?: Partial<Record<RuntimeName, Partial<RuntimeCapabilities>>>;
}

export function createFakeRuntime(opts: FakeRuntimeOptions = {}): FakeRuntime {
  const sandboxes = new Map<string, FakeSandbox>();
  const layers = new Map<string, FakeFs>();
  const programs = builtinPrograms();
  const calls: FakeRuntimeCall[] = [];
  const failures = new Map<string, string>();
  const repls = createKeyedQueue();
  let pid = 1000;
  /** Execs started with an id, by runtime id and exec id: what recoverExecs finds after a restart. */
  const byExecId = new Map<string, { handle: ExecHandle; result: ExecResult | null }>();
  const forkState = opts.forkProcessState !== false;
  const capabilities: RuntimeCapabilities = {
    forkProcessState: forkState,
    pause: true,
    limits: { memory: false, pids: false, cpu: false, disk: false },
    network: false,
  };
  const runtimes: Partial<Record<RuntimeName, RuntimeCapabilities>> = Object.fromEntries(
    Object.entries(opts.runtimes ?? { native: {} }).map(([n, caps]) => [n, { ...capabilities, ...caps }]),
  );

  function live(rec: SandboxRecord): FakeSandbox {
    const sb = sandboxes.get(runtimeId(rec));
    if (!sb || sb.tombstone) throw errors.sandboxNotRunning(rec.id, rec.state);
    if (sb.dead)
      throw new ForkboxError(
        'sandbox_gone',
        `sandbox '${rec.id}' has no processes left (its PID 1 exited). Kill it and create a new one.`,
      );
    return sb;
  }
  const note = (op: string, rec?: SandboxRecord) => calls.push(rec ? { op, rid: runtimeId(rec) } : { op });

  function handleOf(sb: FakeSandbox): SandboxHandle {
    return {
      id: sb.rid,
      hostPid: sb.hostPid,
      runtime: {
        rid: sb.rid,
        templateId: sb.templateId,
        depth: sb.depth,
        lowers: sb.lowers,
        ...(sb.kind ? { kind: sb.kind } : {}),
      },
    };
  }

  function spawn(
    spec: { id: string; name: string; env: Record<string, string> },
    from: {
      fs: FakeFs;
      repl: FakeRepl;
      templateId: string;
      depth: number;
      lowers: string[];
      kind?: RuntimeName | undefined;
      extraEnv: Record<string, string>;
    },
  ): FakeSandbox {
    const failure = failures.get(spec.name) ?? failures.get(spec.id);
    if (failure !== undefined) {
      failures.delete(spec.name);
      failures.delete(spec.id);
      throw new ForkboxError('unavailable', failure);
    }
    const sb: FakeSandbox = {
      rid: spec.id,
      hostPid: ++pid,
      fs: from.fs,
      repl: from.repl,
      env: { ...spec.env, ...from.extraEnv, FORKBOX_SANDBOX_ID: spec.id },
      templateId: from.templateId,
      depth: from.depth,
      lowers: from.lowers,
      ...(from.kind ? { kind: from.kind } : {}),
      paused: false,
      tombstone: false,
      dead: null,
      kills: new Set(),
    };
    sandboxes.set(sb.rid, sb);
    return sb;
  }

  async function reviveSandbox(rec: SandboxRecord): Promise<SandboxHandle> {
    note('reviveSandbox', rec);
    const sb = sandboxes.get(runtimeId(rec));
    if (!sb || failures.delete(rec.name))
      throw new ForkboxError(
        'sandbox_gone',
        `sandbox ${rec.id}'s files are gone: it cannot be started again.`,
      );
    Object.assign(sb, { dead: null, hostPid: ++pid, repl: new FakeRepl(), paused: false, depth: 0 });
    return handleOf(sb);
  }

  const runtime: FakeRuntime = {
    name: 'fake',
    capabilities,
    runtimes,
    runtimeOf: (rec) => runtimeKind(rec),
    sandboxes,
    layers,
    programs,
    calls,
    // Published ports: recorded, never listened on (the native runtime's are tested for real).
    ports: {
      async publish(_rec, port, hostPort) {
        return hostPort === 0 ? 40_000 + (port % 20_000) : hostPort;
      },
      async connect() {
        throw new ForkboxError('unavailable', 'the fake runtime does not relay ports.');
      },
    },

    crash(rid, reason = 'its PID 1 exited') {
      const sb = sandboxes.get(rid);
      if (!sb) return;
      sb.dead = reason;
      const err = new ForkboxError('sandbox_gone', `sandbox '${rid}' ended: ${reason}`);
      for (const k of [...sb.kills]) k(err);
    },
    failNext(name, error) {
      failures.set(name, error);
    },

    async recover(liveRecs) {
      note('recover');
      const lost = liveRecs.filter((r) => {
        const sb = sandboxes.get(runtimeId(r));
        return !sb || sb.dead !== null;
      });
      return { lost: lost.map((r) => r.id) };
    },

    ...(opts.revive ? { reviveSandbox } : {}),

    async createSandbox(spec: CreateSandboxSpec) {
      calls.push({
        op: 'createSandbox',
        rid: spec.id,
        group: spec.group,
        ...(spec.runtime ? { runtime: spec.runtime } : {}),
      });
      await Promise.resolve();
      if (spec.runtime && !runtimes[spec.runtime])
        throw new ForkboxError('unavailable', `the fake runtime has no ${spec.runtime} runtime.`);
      const image = opts.images?.require(spec.image);
      const lowers = spec.lowers ?? image?.layers ?? [`fake-layer-${spec.image}`];
      const base = spec.lowers?.[0] !== undefined ? layers.get(spec.lowers[0]) : undefined;
      const sb = spawn(spec, {
        fs: base ? base.clone() : new FakeFs(),
        repl: new FakeRepl(),
        templateId: `tpl-fake-${spec.image}${spec.prewarm.length ? `-${spec.prewarm.join('.')}` : ''}`,
        depth: 0,
        lowers,
        kind: spec.runtime,
        extraEnv: {},
      });
      for (const m of spec.prewarm) sb.repl.modules.add(m);
      return handleOf(sb);
    },

    async forkSandbox(source, children: ForkChildSpec[], forkOpts): Promise<ForkOutcome> {
      note('forkSandbox', source);
      const src = live(source);
      if (forkOpts?.wait === false && repls.busy(src.rid)) {
        throw new ForkboxError(
          'busy',
          `sandbox '${source.id}' is running Python code; fork again when it ends, or fork with wait: true.`,
        );
      }
      return repls.run(src.rid, async () => {
        const t0 = performance.now();
        const layer = `s-${randomBytes(5).toString('hex')}`;
        const s0 = performance.now();
        layers.set(layer, src.fs.clone());
        const snapshotMs = performance.now() - s0;
        src.lowers = [layer, ...src.lowers];
        const pauseMs = performance.now() - t0;
        const out = children.map((c) => {
          try {
            const sb = spawn(c, {
              fs: src.fs.clone(),
              repl: forkState ? src.repl.clone() : new FakeRepl(),
              templateId: src.templateId,
              depth: src.depth + 1,
              lowers: src.lowers,
              kind: src.kind,
              extraEnv: { FORKBOX_PARENT_ID: source.id, FORKBOX_FORK_INDEX: String(c.forkIndex) },
            });
            return { id: c.id, ok: true as const, handle: handleOf(sb) };
          } catch (e) {
            return { id: c.id, ok: false as const, error: e instanceof Error ? e.message : String(e) };
          }
        });
        return { pauseMs, snapshotMs, driver: 'fake', pythonState: forkState, children: out };
      });
    },

    async killSandbox(rec, killOpts) {
      note(killOpts?.keepInit ? 'tombstone' : 'killSandbox', rec);
      const sb = sandboxes.get(runtimeId(rec));
      if (!sb) return;
      const err = errors.sandboxNotRunning(rec.id, 'killed');
      for (const k of [...sb.kills]) k(err);
      if (killOpts?.keepInit) {
        sb.tombstone = true;
        sb.repl.restart();
        return;
      }
      sandboxes.delete(sb.rid);
    },
    async pauseSandbox(rec) {
      note('pauseSandbox', rec);
      live(rec).paused = true;
    },
    async resumeSandbox(rec) {
      note('resumeSandbox', rec);
      live(rec).paused = false;
    },
    async usage(rec) {
      const sb = live(rec);
      return {
        memoryBytes: (1 + sb.kills.size + sb.repl.vars.size) * 1024 * 1024,
        cpuUsageNs: 1_000_000,
        pids: 1 + (sb.repl.vars.size > 0 ? 1 : 0) + sb.kills.size,
        diskBytes: sb.fs.bytes(),
        diskInodes: sb.fs.nodes.size,
        oomKills: 0,
      };
    },

    exec(rec, spec, events) {
      note('exec', rec);
      const sb = sandboxes.get(runtimeId(rec));
      const handle = startFakeExec(
        {
          fs: sb?.fs ?? new FakeFs(),
          env: sb?.env ?? {},
          programs,
          nextPid: () => ++pid,
          gone: () => {
            try {
              live(rec);
              return null;
            } catch (e) {
              return e as ForkboxError;
            }
          },
          crash: (reason) => runtime.crash(runtimeId(rec), reason),
          track: (kill) => {
            sb?.kills.add(kill);
            return () => sb?.kills.delete(kill);
          },
        },
        spec,
        events,
      );
      if (spec.execId !== undefined) {
        const entry: { handle: ExecHandle; result: ExecResult | null } = { handle, result: null };
        byExecId.set(`${runtimeId(rec)}\0${spec.execId}`, entry);
        handle.result.then(
          (r) => {
            entry.result = r;
          },
          () => undefined,
        );
      }
      return handle;
    },

    async killExecTree(rec) {
      note('killExecTree', rec);
      return 0;
    },

    async execTreeSize(rec) {
      note('execTreeSize', rec);
      return 0;
    },

    async recoverExecs(rec, running) {
      note('recoverExecs', rec);
      const rid = runtimeId(rec);
      const out = [];
      for (const id of running) {
        const entry = byExecId.get(`${rid}\0${id}`);
        if (entry?.result) {
          out.push({ id, result: entry.result });
          continue;
        }
        // Still running (or unknown): its tree is killed, as the native runtime does.
        entry?.handle.cancel();
        out.push({ id, result: null });
      }
      return out;
    },

    replEval(rec, code, evalOpts) {
      note('replEval', rec);
      if (evalOpts.language === 'node') {
        // The fake's images have no Node.js: the native agent's answer for such an image.
        return Promise.reject(
          new ForkboxError('requirement_missing', "this sandbox's image has no Node.js (no `node` on PATH)"),
        );
      }
      return repls.run(runtimeId(rec), async () => {
        const sb = live(rec);
        const t0 = performance.now();
        let timedOut = false;
        const stop = new AbortController();
        const timer =
          evalOpts.timeoutMs !== undefined && evalOpts.timeoutMs > 0
            ? setTimeout(() => {
                timedOut = true;
                stop.abort();
              }, evalOpts.timeoutMs)
            : null;
        const kill = () => stop.abort();
        sb.kills.add(kill);
        try {
          const r = await sb.repl.eval(code, {
            sleep: (ms) =>
              new Promise<void>((resolve, reject) => {
                if (stop.signal.aborted) return reject(new Error('interrupted'));
                const t = Number.isFinite(ms) ? setTimeout(resolve, ms) : null;
                stop.signal.addEventListener('abort', () => {
                  if (t) clearTimeout(t);
                  reject(new Error('interrupted'));
                });
              }),
          });
          return { ...r, timedOut: false, durationMs: performance.now() - t0 };
        } catch (e) {
          if (!stop.signal.aborted) throw e;
          if (sb.dead) throw new ForkboxError('sandbox_gone', `sandbox '${rec.id}' ended: ${sb.dead}`);
          const error = { type: 'KeyboardInterrupt', message: '', traceback: 'KeyboardInterrupt\n' };
          return {
            ok: false,
            value: null,
            stdout: '',
            stderr: '',
            error,
            timedOut,
            interrupted: true,
            restarted: false,
            truncated: false,
            oomKilled: false,
            images: [],
            durationMs: performance.now() - t0,
          };
        } finally {
          if (timer) clearTimeout(timer);
          sb.kills.delete(kill);
        }
      });
    },
    async replRestart(rec) {
      note('replRestart', rec);
      await repls.run(runtimeId(rec), async () => live(rec).repl.restart());
    },

    async readFile(rec, path, o) {
      return live(rec).fs.read(path, o);
    },
    async writeFile(rec, path, data, o) {
      return live(rec).fs.write(path, data, o);
    },
    async listFiles(rec, path, o) {
      return live(rec).fs.list(path, o);
    },
    async statFile(rec, path) {
      return live(rec).fs.stat(path);
    },
    async deleteFile(rec, path, o) {
      live(rec).fs.delete(path, o);
    },
    async mkdir(rec, path, o) {
      live(rec).fs.mkdir(path, o);
    },
    async moveFile(rec, from, to, o) {
      live(rec).fs.move(from, to, o);
    },

    layerChain(rec): LayerChain {
      const sb = sandboxes.get(runtimeId(rec));
      if (!sb) throw errors.sandboxNotRunning(rec.id, rec.state);
      return { upper: `fake-upper/${sb.rid}`, lowers: sb.lowers };
    },
    async diffLayers(a, b, o) {
      const view = (c: LayerChain) =>
        sandboxes.get(c.upper.replace(/^fake-upper\//, ''))?.fs ??
        layers.get(c.lowers[0] ?? '') ??
        new FakeFs();
      return diffFakeLayers(view(a), view(b), a.lowers.find((l) => b.lowers.includes(l)) ?? null, o);
    },

    async releaseTemplate() {
      return false;
    },

    async shutdown(o) {
      note('shutdown');
      if (o.killSandboxes) {
        for (const sb of sandboxes.values())
          for (const k of [...sb.kills]) k(errors.sandboxNotRunning(sb.rid, 'killed'));
        sandboxes.clear();
      }
    },
  };
  return runtime;
}
