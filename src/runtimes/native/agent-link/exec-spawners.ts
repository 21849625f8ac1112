/**
 * Exec groups, placed ahead of time. Each sandbox's agent has a spawner (src/agent/spawner.py): the one
 * process that starts commands, with posix_spawn, so each command is born in the spawner's cgroup. Before
 * every exec the spawner sits alone in a fresh group `<sandbox>/work/<tree>`; the command started there
 * (and everything it starts: setsid, nohup, double forks) stays in that group, which can be frozen and
 * killed as a whole. Right after the spawn, the spawner is moved on into the next fresh group. A move
 * between cgroup v1 groups waits for an RCU grace period (~8 ms after a quiet spell, ~0.05 ms in a burst):
 * it happens between execs, so an exec's round trip does not wait for it. Spawns in one sandbox are taken
 * in turn (one spawner), each a few milliseconds.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ForkboxError, toForkboxError } from '../../../domain/errors.ts';
import type { Cgroups } from '../cgroups/index.ts';
import { readProcStatus } from '../host/proc.ts';
import type { AgentConnection } from './agent-connection.ts';
import { createSharedLock } from './shared-lock.ts';

const SPAWNER_TIMEOUT_MS = 10_000;

/** The exec group of a tree, relative to the cgroup root. */
export const execGroup = (sandboxCgroup: string, tree: string): string => `${sandboxCgroup}/work/${tree}`;

/** Names the runtime gives exec groups (anything else under `work` is not an exec's). */
export const TREE_NAME = /^x-[0-9a-f]{12}$/;

export const newTree = (): string => `x-${randomBytes(6).toString('hex')}`;

/** What an exec gets: the spawner to name in its request and the group the command will be born in. */
export interface SpawnSlot {
  /**
   * The spawner's pid in the sandbox (the exec request's `spawner`: the agent refuses if it changed); null:
   * the agent's own spawner, whichever it is (a runtime that places no spawner).
   */
  spawner: number | null;
  /** Host pid of the spawner: not one of the command's processes, though it shares its group a while. */
  spawnerHostPid: number;
  tree: string;
  /** The spawn is done (the command started, or could not): the spawner moves on, the next exec may come. */
  release(): void;
  /** Resolves once the spawner has left this exec's group (before the group is killed or removed). */
  left: Promise<void>;
}

export interface SpawnHost {
  id: string;
  /** The sandbox's cgroup (relative path). */
  cgroup: string;
  /** Host pid of its PID 1 (the agent, whose child the spawner is). */
  hostPid: number;
}

interface State {
  conn: AgentConnection;
  nsPid: number | null;
  hostPid: number;
  /** The fresh group the spawner is in (or being moved into), ready for the next exec. */
  next: { tree: string; placed: Promise<void> } | null;
  /** The previous exec's turn: resolves at its release. */
  turn: Promise<void>;
}

/** Host pid of a child of `parentHostPid` whose pid in the sandbox's namespace is `nsPid`. */
function childHostPid(parentHostPid: number, nsPid: number): number | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${parentHostPid}/task/${parentHostPid}/children`, 'utf8');
  } catch {
    return null;
  }
  const depth = readProcStatus(parentHostPid)?.nsPids.length;
  if (depth === undefined) return null;
  for (const word of text.split(' ')) {
    const pid = Number(word);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    const st = readProcStatus(pid);
    if (st && st.ppid === parentHostPid && st.nsPids.length === depth && st.nsPids[depth - 1] === nsPid)
      return pid;
  }
  return null;
}

export interface ExecSpawners {
  /** The next exec's slot, once the spawner sits in a fresh group; its `release()` must be called. */
  acquire(sb: SpawnHost, conn: AgentConnection): Promise<SpawnSlot>;
  /** Starts the spawner and places it in a fresh group now, ahead of a first exec. */
  prepare(sb: SpawnHost, conn: AgentConnection): Promise<void>;
  /** The agent refused an exec because its spawner changed: find the new one next time. */
  invalidate(sandboxId: string): void;
  /** The group the spawner waits in (recovery must not take it for an exec's), or null. */
  idleTree(sandboxId: string): string | null;
  /** Runs `fn` while nothing is being placed in this sandbox (a fork sorting its processes into leaves). */
  exclusive<T>(sandboxId: string, fn: () => Promise<T>): Promise<T>;
  /** The sandbox is gone (its groups go with its cgroup): drops what is held for it. */
  forget(sandboxId: string): void;
}

export function createExecSpawners(deps: { cgroups: Cgroups }): ExecSpawners {
  const { cgroups } = deps;
  const states = new Map<string, State>();
  const placement = createSharedLock();

  /** Move the spawner into a fresh group (made now). */
  function place(sb: SpawnHost, st: State): { tree: string; placed: Promise<void> } {
    const tree = newTree();
    const placed = placement.shared(sb.id, async () => {
      const g = execGroup(sb.cgroup, tree);
      await cgroups.createSubgroup(g);
      await cgroups.moveWithin(g, st.hostPid);
    });
    placed.catch(() => undefined);
    return { tree, placed };
  }

  /** The agent's spawner: started if needed, found on the host. */
  async function locate(sb: SpawnHost, st: State): Promise<void> {
    const { result } = await st.conn.request('exec.spawner', {}, { timeoutMs: SPAWNER_TIMEOUT_MS });
    const nsPid = result.pid;
    if (typeof nsPid !== 'number' || !Number.isInteger(nsPid) || nsPid <= 0)
      throw new ForkboxError(
        'agent_protocol',
        `the agent of sandbox '${sb.id}' answered exec.spawner without a pid`,
      );
    const hostPid = childHostPid(sb.hostPid, nsPid);
    if (hostPid === null)
      throw new ForkboxError(
        'unavailable',
        `the process that starts commands in sandbox '${sb.id}' ended; retry`,
      );
    st.nsPid = nsPid;
    st.hostPid = hostPid;
    st.next = place(sb, st);
  }

  /** Wait for the previous spawn in this sandbox; returns what ends this turn. */
  async function takeTurn(st: State): Promise<() => void> {
    const previous = st.turn;
    let release: () => void = () => undefined;
    st.turn = new Promise<void>((r) => {
      release = r;
    });
    await previous;
    return release;
  }

  /** The spawner sitting in a fresh group: started and placed if it is not, started again if it ended. */
  async function readySpawner(sb: SpawnHost, st: State): Promise<{ tree: string; placed: Promise<void> }> {
    if (st.nsPid === null || st.next === null) await locate(sb, st);
    let next = st.next as { tree: string; placed: Promise<void> };
    try {
      await next.placed;
    } catch {
      // The spawner ended since (killed with a group, OOM): the agent starts another.
      await locate(sb, st);
      next = st.next as { tree: string; placed: Promise<void> };
      await next.placed;
    }
    return next;
  }

  function stateOf(sb: SpawnHost, conn: AgentConnection): State {
    let st = states.get(sb.id);
    if (!st || st.conn !== conn) {
      st = { conn, nsPid: null, hostPid: 0, next: null, turn: Promise.resolve() };
      states.set(sb.id, st);
    }
    return st;
  }

  return {
    /**
     * The slot for the next exec in this sandbox: waits for the previous exec's spawn and for the spawner
     * to sit in a fresh group. The caller must call `release()` once its spawn is done, whatever happened.
     */
    async acquire(sb: SpawnHost, conn: AgentConnection): Promise<SpawnSlot> {
      const st = stateOf(sb, conn);
      const release = await takeTurn(st);
      try {
        const next = await readySpawner(sb, st);
        st.next = null;
        const spawner = st.nsPid as number;
        let left: Promise<void> = Promise.resolve();
        let released = false;
        const slot: SpawnSlot = {
          spawner,
          spawnerHostPid: st.hostPid,
          tree: next.tree,
          release() {
            if (released) return;
            released = true;
            // On into the next fresh group, now: by the next exec it is (usually) there already.
            if (states.get(sb.id) === st && st.nsPid === spawner) {
              st.next = place(sb, st);
              left = st.next.placed;
            }
            slot.left = left.catch(() => undefined);
            release();
          },
          left: new Promise<void>(() => undefined),
        };
        return slot;
      } catch (e) {
        st.nsPid = null;
        st.next = null;
        release();
        throw toForkboxError(e);
      }
    },

    /**
     * Start the spawner and place it in a fresh group now, ahead of a first exec (a pooled sandbox: the
     * fork of the spawner off the agent and its first move then cost the first exec nothing).
     */
    async prepare(sb: SpawnHost, conn: AgentConnection): Promise<void> {
      const st = stateOf(sb, conn);
      const release = await takeTurn(st);
      try {
        await readySpawner(sb, st);
      } catch (e) {
        st.nsPid = null;
        st.next = null;
        throw toForkboxError(e);
      } finally {
        release();
      }
    },

    invalidate(sandboxId: string): void {
      const st = states.get(sandboxId);
      if (st) {
        st.nsPid = null;
        st.next = null;
      }
    },

    idleTree(sandboxId: string): string | null {
      return states.get(sandboxId)?.next?.tree ?? null;
    },

    exclusive<T>(sandboxId: string, fn: () => Promise<T>): Promise<T> {
      return placement.exclusive(sandboxId, fn);
    },

    forget(sandboxId: string): void {
      states.delete(sandboxId);
    },
  };
}
