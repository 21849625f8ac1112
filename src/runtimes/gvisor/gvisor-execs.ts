/**
 * Execs of gvisor sandboxes: the native runtime's exec path (agent-link/exec-ops.ts) with the agent's own
 * spawner (the host cannot place a process inside a sentry) and trees the agent counts and ends by
 * session (agent/trees.py), since the host's cgroups see only the sentry.
 */
import type { AgentConnection } from '../native/agent-link/agent-connection.ts';
import { type ExecSpawners, newTree, type SpawnSlot } from '../native/agent-link/exec-spawners.ts';
import type { ExecTrees } from '../native/agent-link/exec-trees.ts';

/** Slots with the agent's own spawner and a fresh tree name each. */
export function createAgentSpawners(): ExecSpawners {
  const slot = (): SpawnSlot => ({
    spawner: null,
    spawnerHostPid: 0,
    tree: newTree(),
    release: () => undefined,
    left: Promise.resolve(),
  });
  return {
    acquire: async () => slot(),
    prepare: async () => undefined,
    invalidate: () => undefined,
    idleTree: () => null,
    exclusive: (_id, fn) => fn(),
    forget: () => undefined,
  };
}

/** `scope`: the sandbox's runtime id. */
export function createAgentTrees(deps: { connOf(id: string): Promise<AgentConnection> }): ExecTrees {
  async function ask(id: string, tree: string, kill: boolean): Promise<number> {
    const c = await deps.connOf(id);
    const { result } = await c.request('tree', { tree, kill }, { timeoutMs: 10_000 });
    return typeof result.procs === 'number' ? result.procs : 0;
  }
  return {
    count: (id, tree) => ask(id, tree, false),
    kill: (id, tree) => ask(id, tree, true),
    async settle(id, tree, killAll) {
      if (killAll) {
        await ask(id, tree, true);
        return 0;
      }
      return ask(id, tree, false);
    },
    // The agent forgets trees as they empty; a daemon restart loses gvisor sandboxes anyway.
    names: async () => [],
  };
}
