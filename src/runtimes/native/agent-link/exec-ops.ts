/**
 * Execs of native sandboxes, over the agent connection: each command is born in an exec group of its own
 * (exec-spawners.ts), its output arrives within the bounds of the output contract (exec-output-router.ts),
 * and a timeout, cancel or failure ends its whole process tree by its group.
 */
import { ForkboxError } from '../../../domain/errors.ts';
import type { SandboxRecord } from '../../../domain/types.ts';
import type { ExecEvents, ExecHandle, ExecResult, ExecSpec, RecoveredExec } from '../../../service/ports.ts';
import type { AgentConnection } from './agent-connection.ts';
import { createOutputRouter, DEFAULT_OUTPUT_BYTES } from './exec-output-router.ts';
import type { ExecSpawners, SpawnHost, SpawnSlot } from './exec-spawners.ts';
import { type ExecTrees, TREE_NAME } from './exec-trees.ts';
import { StreamCollector } from './output.ts';

export interface ExecOpsDeps {
  connOf(rec: SandboxRecord): Promise<AgentConnection>;
  /** The live sandbox behind a record: its cgroup and PID 1. */
  hostOf(rec: SandboxRecord): SpawnHost;
  /** What counts and ends an exec's process tree (native: its exec group, exec-trees.ts). */
  trees: ExecTrees;
  spawners: ExecSpawners;
  /** OOM kills in the sandbox so far (an exec killed by SIGKILL checks whether it was the OOM killer). */
  oomKills(rec: SandboxRecord): Promise<number>;
}

const num = (v: unknown, d = 0): number => (typeof v === 'number' && Number.isFinite(v) ? v : d);
const isStale = (e: unknown): boolean =>
  e instanceof ForkboxError && (e.details as { agentCode?: unknown } | undefined)?.agentCode === 'stale';

/** The agent's exec arguments for a spec and a spawn slot. */
function execArgs(spec: ExecSpec, slot: SpawnSlot): Record<string, unknown> {
  return {
    ...(spec.argv ? { argv: spec.argv } : { cmd: spec.cmd }),
    // No cwd: the agent's default (the image's WorkingDir, else /).
    ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
    env: spec.env ?? {},
    stdin: spec.stdin === true,
    timeout_ms: spec.timeoutMs ?? 0,
    max_output_bytes: spec.maxOutputBytes ?? DEFAULT_OUTPUT_BYTES,
    spool_bytes: spec.execId ? (spec.spoolBytes ?? 0) : 0,
    ...(spec.execId ? { output_id: spec.execId, tag: spec.execId } : {}),
    mode: spec.mode ?? 'head',
    ...(spec.tty ? { tty: { rows: spec.tty.rows, cols: spec.tty.cols } } : {}),
    ...(slot.spawner === null ? {} : { spawner: slot.spawner }),
    tree: slot.tree,
  };
}

/** An ExecResult from the agent's result fields (no inline output: a result kept while no host listened). */
function keptResult(r: Record<string, unknown>, leftovers: number, tree: string | null): ExecResult {
  const f = {
    stdout: new StreamCollector('stdout').finish(r),
    stderr: new StreamCollector('stderr').finish(r),
  };
  return {
    exitCode: r.exit_code === null || r.exit_code === undefined ? null : num(r.exit_code),
    signal: r.signal === null || r.signal === undefined ? null : num(r.signal),
    timedOut: r.timed_out === true,
    cancelled: r.cancelled === true,
    truncated: f.stdout.summary.omittedBytes + f.stderr.summary.omittedBytes > 0,
    oomKilled: false,
    durationMs: num(r.duration_ms),
    stdout: Buffer.alloc(0),
    stderr: Buffer.alloc(0),
    streams: { stdout: f.stdout.summary, stderr: f.stderr.summary },
    leftovers,
    tree: leftovers > 0 ? tree : null,
  };
}

export interface ExecOps {
  /** Starts a command in an exec group of its own; its handle writes stdin, signals, resizes, cancels. */
  exec(rec: SandboxRecord, spec: ExecSpec, events?: ExecEvents): ExecHandle;
  /** Starts and places the spawner, then runs `true` through the whole exec path, ahead of a first exec. */
  prepareExecs(rec: SandboxRecord): Promise<void>;
  /** Ends every process left in an exec's tree; returns how many there were (0 for a name not a tree's). */
  killExecTree(rec: SandboxRecord, tree: string): Promise<number>;
  /** Processes still running in an exec's tree. */
  execTreeSize(rec: SandboxRecord, tree: string): Promise<number>;
  /** After a daemon restart: the kept results of `running` execs; kills every other exec tree but `keep`. */
  recoverExecs(rec: SandboxRecord, running: string[], keep: string[]): Promise<RecoveredExec[]>;
}

export function createExecOps(deps: ExecOpsDeps): ExecOps {
  const { trees } = deps;

  /** Send the exec request; once more with a fresh slot when the agent's spawner changed meanwhile. */
  async function send(
    host: SpawnHost,
    spec: ExecSpec,
    events: ExecEvents | undefined,
    c: AgentConnection,
    onId: (id: number) => void,
    onSlot: (slot: SpawnSlot) => void,
  ) {
    for (let attempt = 0; ; attempt++) {
      const slot = await deps.spawners.acquire(host, c);
      onSlot(slot);
      const router = createOutputRouter(spec, events, () => slot.release());
      const s = c.stream('exec', execArgs(spec, slot), { onEvent: router.onEvent });
      onId(s.id);
      try {
        const { result } = await s.done;
        slot.release();
        return { r: result, router, slot };
      } catch (e) {
        slot.release();
        if (isStale(e) && attempt === 0) {
          deps.spawners.invalidate(host.id);
          continue;
        }
        // No result will come (the agent refused it, or its connection dropped): end whatever it started.
        await trees.kill(host.cgroup, slot.tree, slot).catch(() => undefined);
        throw e;
      }
    }
  }

  function exec(rec: SandboxRecord, spec: ExecSpec, events?: ExecEvents): ExecHandle {
    let streamId: number | null = null;
    let conn: AgentConnection | null = null;
    let cancelled = false;
    let slotNow: SpawnSlot | null = null;
    let stdinQueue: Promise<unknown> = Promise.resolve();
    let idKnown: (id: number) => void = () => undefined;
    const idSent = new Promise<number>((resolve) => {
      idKnown = resolve;
    });
    const host = deps.hostOf(rec);
    /** End every process of the exec's group (once the spawner has left it). */
    const endTree = (slot: SpawnSlot) => {
      trees.kill(host.cgroup, slot.tree, slot).catch(() => undefined);
    };
    const started = (async () => {
      conn = await deps.connOf(rec);
      return { conn, before: await deps.oomKills(rec) };
    })();
    const result = (async (): Promise<ExecResult> => {
      const { conn: c, before } = await started;
      const { r, router, slot } = await send(
        host,
        spec,
        events,
        c,
        (id) => {
          streamId = id;
          idKnown(id);
          if (cancelled) c.cancel(id);
        },
        (s) => {
          slotNow = s;
          if (cancelled) endTree(s);
        },
      );
      const timedOut = r.timed_out === true;
      const wasCancelled = r.cancelled === true || cancelled;
      const signal = r.signal === null || r.signal === undefined ? null : num(r.signal);
      // A timeout or cancel ends the whole tree (the agent killed the process group; the group has the rest).
      const leftovers = await trees.settle(host.cgroup, slot.tree, timedOut || wasCancelled, slot);
      const after = signal === 9 ? await deps.oomKills(rec) : before;
      const out = router.finish(r);
      return {
        exitCode: r.exit_code === null || r.exit_code === undefined ? null : num(r.exit_code),
        signal,
        timedOut,
        cancelled: wasCancelled,
        truncated: out.stdout.summary.omittedBytes + out.stderr.summary.omittedBytes > 0,
        oomKilled: after > before,
        durationMs: num(r.duration_ms),
        stdout: out.stdout.data,
        stderr: out.stderr.data,
        streams: { stdout: out.stdout.summary, stderr: out.stderr.summary },
        leftovers,
        tree: leftovers > 0 ? slot.tree : null,
      };
    })();
    /** The agent's id of the exec request once sent; the exec's failure when it never was. */
    const sentId = () =>
      Promise.race([
        idSent,
        result.then(
          () => streamId ?? Promise.reject(new ForkboxError('conflict', 'the exec has ended.')),
          (e: unknown) => streamId ?? Promise.reject(e),
        ),
      ]);
    return {
      result,
      async writeStdin(data, eof = false) {
        const { conn: c } = await started;
        const id = await sentId();
        // Keep stdin writes in order even when callers do not await each one.
        const next = stdinQueue.then(() => c.request('exec.stdin', { exec_id: id, eof }, { body: data }));
        stdinQueue = next.catch(() => undefined);
        await next;
      },
      async signal(sig) {
        const { conn: c } = await started;
        if (streamId !== null) await c.request('exec.signal', { exec_id: streamId, signal: sig });
      },
      async resize(size) {
        const { conn: c } = await started;
        const id = await sentId();
        await c.request('exec.resize', { exec_id: id, rows: size.rows, cols: size.cols });
      },
      cancel() {
        if (cancelled) return;
        cancelled = true;
        // The agent kills the process group at once, and the host ends the exec's group itself too: a
        // cancel does not depend on the agent acting on it (nor on its result arriving).
        if (conn && streamId !== null) conn.cancel(streamId);
        if (slotNow) endTree(slotNow);
      },
    };
  }

  return {
    exec,

    /**
     * Ahead of a first exec: the spawner started and placed, then one `true` run through the whole exec
     * path (the agent's and the host's first-use costs), recorded nowhere (the engine keeps exec records).
     */
    async prepareExecs(rec: SandboxRecord): Promise<void> {
      await deps.spawners.prepare(deps.hostOf(rec), await deps.connOf(rec));
      const r = await exec(rec, { argv: ['true'], timeoutMs: 10_000 }).result;
      if (r.exitCode !== 0)
        throw new ForkboxError('internal', `true exited ${r.exitCode} (signal ${r.signal})`);
    },

    async killExecTree(rec: SandboxRecord, tree: string): Promise<number> {
      if (!TREE_NAME.test(tree)) return 0;
      return trees.kill(deps.hostOf(rec).cgroup, tree);
    },

    async execTreeSize(rec: SandboxRecord, tree: string): Promise<number> {
      if (!TREE_NAME.test(tree)) return 0;
      return trees.count(deps.hostOf(rec).cgroup, tree);
    },

    async recoverExecs(rec: SandboxRecord, running: string[], keep: string[]): Promise<RecoveredExec[]> {
      const host = deps.hostOf(rec);
      let results: Record<string, unknown> = {};
      try {
        const c = await deps.connOf(rec);
        const { result } = await c.request(
          'exec.results',
          { tags: running.slice(0, 4096) },
          { timeoutMs: 5000 },
        );
        if (result.results && typeof result.results === 'object')
          results = result.results as Record<string, unknown>;
      } catch {
        // Agent unreachable: every exec tree but `keep` is killed below; the execs are reported interrupted.
      }
      const idle = deps.spawners.idleTree(host.id);
      const kept = new Set([...keep, ...(idle ? [idle] : [])]);
      const out: RecoveredExec[] = [];
      for (const id of running) {
        const r = results[id];
        if (!r || typeof r !== 'object') {
          out.push({ id, result: null });
          continue;
        }
        const res = r as Record<string, unknown>;
        const tree = typeof res.tree === 'string' && TREE_NAME.test(res.tree) ? res.tree : null;
        const ended = res.timed_out === true || res.cancelled === true;
        const leftovers = tree ? await trees.settle(host.cgroup, tree, ended) : 0;
        if (tree && leftovers > 0) kept.add(tree);
        out.push({ id, result: keptResult(res, leftovers, tree) });
      }
      // Every other exec group: execs that were running (they end for real now), or the old spawner's.
      for (const name of await trees.names(host.cgroup).catch(() => [] as string[])) {
        if (TREE_NAME.test(name) && !kept.has(name))
          await trees.kill(host.cgroup, name).catch(() => undefined);
      }
      return out;
    },
  };
}
