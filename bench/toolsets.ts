/**
 * Toolsets: the round trip of one simple exec (`true`) through each compatibility toolset, against the
 * canonical `exec_run`, all in the same run on the same warm sandbox. Each toolset has its own MCP
 * server and an in-memory client (no transport cost), over the first surface's API (the daemon client,
 * unless `--surface in-process`), so the difference is the adapter: argument parsing, the system's
 * result shape and wording. The toolsets are sampled round-robin (one of each per iteration) so load
 * drifts hit all alike.
 *
 * What "one simple exec" is in each system: forkd `exec_command`, Podflare `run_bash` (`bash -c true`,
 * as Podflare ran it), agentkernel `sandbox_exec`, microsandbox `sandbox_run_command`, and DevBench,
 * which has no synchronous exec, `exec_start` then `exec_poll` until complete (its documented loop).
 */
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { createDefaultSandbox, createForkboxMcpServer } from '../src/protocol/mcp/server.ts';
import type { ForkboxApi } from '../src/service/api.ts';
import { type BenchContext, type Benchmark, killAll } from './lib/context.ts';
import { emptyResult, ratio, row } from './lib/report.ts';
import { timeMs } from './lib/stats.ts';

const NAME = 'toolsets';
const WARMUP = 10;
const SANDBOX_NAME = `bench-toolsets-${process.pid}`;

type Call = (name: string, args: Record<string, unknown>) => Promise<CallToolResult>;

interface Probe {
  toolset: string;
  label: string;
  fn: (call: Call, sandbox: { id: string; name: string }) => Promise<void>;
}

function text(r: CallToolResult): string {
  const first = r.content[0];
  return first?.type === 'text' ? first.text : '';
}

/** A result that must not be an error, as JSON. */
function ok(tool: string, r: CallToolResult): Record<string, unknown> {
  if (r.isError === true) throw new Error(`${tool} failed: ${text(r).slice(0, 500)}`);
  return (r.structuredContent as Record<string, unknown> | undefined) ?? JSON.parse(text(r) || 'null');
}

function exitZero(tool: string, v: Record<string, unknown>, field = 'exit_code'): void {
  if (v[field] !== 0) throw new Error(`${tool}: exit ${String(v[field])}`);
}

const PROBES: Probe[] = [
  {
    toolset: 'forkbox',
    label: 'forkbox exec_run true',
    fn: async (call, sb) =>
      exitZero('exec_run', ok('exec_run', await call('exec_run', { sandbox: sb.id, argv: ['true'] }))),
  },
  {
    toolset: 'forkd',
    label: 'forkd exec_command true',
    fn: async (call, sb) =>
      exitZero(
        'exec_command',
        ok('exec_command', await call('exec_command', { sandbox_id: sb.id, args: ['true'] })),
      ),
  },
  {
    toolset: 'podflare',
    label: 'podflare run_bash true',
    fn: async (call, sb) =>
      exitZero('run_bash', ok('run_bash', await call('run_bash', { code: 'true', sandbox_id: sb.id }))),
  },
  {
    toolset: 'agentkernel',
    label: 'agentkernel sandbox_exec true',
    // agentkernel answers text; a non-zero exit is an error result (ok() throws on it).
    fn: async (call, sb) => {
      const r = await call('sandbox_exec', { name: sb.name, command: ['true'] });
      if (r.isError === true) throw new Error(`sandbox_exec failed: ${text(r).slice(0, 500)}`);
    },
  },
  {
    toolset: 'microsandbox',
    label: 'microsandbox sandbox_run_command true',
    fn: async (call, sb) =>
      exitZero(
        'sandbox_run_command',
        ok(
          'sandbox_run_command',
          await call('sandbox_run_command', { sandbox: sb.name, namespace: 'default', command: 'true' }),
        ),
      ),
  },
  {
    toolset: 'devbench',
    label: 'devbench exec_start + exec_poll true',
    fn: async (call, sb) => {
      const started = ok(
        'exec_start',
        await call('exec_start', { input_data: { container_id: sb.id, cmd: ['true'], cwd: '/' } }),
      );
      for (;;) {
        const r = ok('exec_poll', await call('exec_poll', { input_data: { exec_id: started.exec_id } }));
        if (r.complete !== true) continue;
        const done = (r.messages as Record<string, unknown>[]).find((m) => m.complete === true);
        if (!done) throw new Error('exec_poll: complete without a completion message');
        exitZero('exec_poll', done);
        return;
      }
    },
  },
];

async function connect(api: ForkboxApi, toolset: string): Promise<{ call: Call; close(): Promise<void> }> {
  const server = createForkboxMcpServer({
    api,
    defaults: createDefaultSandbox(),
    toolsets: [toolset],
    version: 'bench',
  });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client({ name: `forkbox-bench-${toolset}`, version: '1' });
  await client.connect(ct);
  return {
    call: async (name, args) => (await client.callTool({ name, arguments: args })) as CallToolResult,
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}

export const toolsetsBench: Benchmark = {
  name: NAME,
  description: "one exec's round trip through each compatibility toolset vs the canonical exec_run",
  async run(ctx: BenchContext) {
    const out = emptyResult();
    const surface = ctx.surfaces[0];
    if (!surface) throw new Error('toolsets: no surface to measure');
    const api = surface.api;
    const clients: { close(): Promise<void> }[] = [];
    let id = '';
    try {
      const sb = await api.createSandbox({ name: SANDBOX_NAME });
      id = sb.id;
      const target = { id: sb.id, name: sb.name };
      const runs: { probe: Probe; call: Call; samples: number[] }[] = [];
      for (const probe of PROBES) {
        const c = await connect(api, probe.toolset);
        clients.push(c);
        runs.push({ probe, call: c.call, samples: [] });
      }
      for (let i = 0; i < WARMUP; i++) for (const r of runs) await r.probe.fn(r.call, target);
      for (let i = 0; i < ctx.runs; i++) {
        for (const r of runs) r.samples.push(await timeMs(() => r.probe.fn(r.call, target)));
      }
      const rows = runs.map((r) => row(NAME, `${r.probe.label} (${surface.name})`, 'ms', r.samples));
      out.rows.push(...rows);
      const [canonical, ...others] = rows;
      if (canonical) {
        for (const [i, other] of others.entries()) {
          const label = runs[i + 1]?.probe.toolset ?? '?';
          out.ratios.push(ratio(NAME, `${label} / forkbox exec_run`, other, canonical));
        }
      }
      out.notes.push(
        'toolsets: in-memory MCP clients, one server per toolset, same sandbox, round-robin samples; DevBench has no synchronous exec: its row is exec_start + exec_poll until complete.',
      );
    } finally {
      for (const c of clients) await c.close().catch(() => undefined);
      if (id) await killAll(api, [id], ctx.log);
    }
    return out;
  },
};
