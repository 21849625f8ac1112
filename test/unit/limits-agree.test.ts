/**
 * One source of truth for limits: for every bound in domain/limits.ts, the MCP tool input schemas, the
 * REST (and so OpenAPI) schemas and the engine agree at each edge — min−ε and max+ε refused by all
 * three, min and max accepted by all three. A surface with its own numbers fails here. MCP alone has
 * two tighter bounds of its own (inline output and a poll's wait), also defined there and checked to lie
 * within the engine's. The agent inside each sandbox is handed its bounds by the host and is asked
 * here too (last suite).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { z } from 'zod';
import { isForkboxError } from '../../src/domain/errors.ts';
import { AGENT_BOUNDS, agentBoundsEnv, type Bound, EGRESS, LIMITS } from '../../src/domain/limits.ts';
import { CANONICAL_TOOLS } from '../../src/protocol/mcp/tools/index.ts';
import {
  codeBody,
  createSandboxBody,
  defineTemplateBody,
  execBody,
  exposePortBody,
  extendBody,
  forkBody,
  pollQuery,
  resizeBody,
} from '../../src/protocol/rest/local-schemas.ts';
import { MAX_BODY_BYTES, MAX_HEADER_BYTES } from '../../src/runtimes/native/agent-link/agent-frame.ts';
import { DEFAULT_OUTPUT_BYTES } from '../../src/runtimes/native/agent-link/exec-output-router.ts';
import { tailBudget } from '../../src/runtimes/native/agent-link/output.ts';
import { REPL_DEFAULT_OUTPUT_BYTES } from '../../src/runtimes/native/agent-link/repl-eval.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { createTestEngine, type TestEngine } from '../helpers/test-engine.ts';

type Engine = (api: ForkboxApi, ctx: { sandbox: string; execId: string }, v: number) => Promise<unknown>;

interface Surface {
  bound: Bound;
  /** Tool name → the argument carrying the value, plus what else the tool requires. */
  mcp: { tool: string; arg: string; base?: Record<string, unknown> }[];
  rest: { schema: z.ZodType; field: string; base?: Record<string, unknown>; query?: boolean }[];
  engine: Engine[];
}

const SURFACES: Surface[] = [
  {
    bound: LIMITS.port,
    mcp: [{ tool: 'port_expose', arg: 'port' }],
    rest: [{ schema: exposePortBody, field: 'port' }],
    engine: [(api, c, v) => api.exposePort(c.sandbox, v)],
  },
  {
    bound: LIMITS.hostPort,
    mcp: [{ tool: 'port_expose', arg: 'host_port', base: { port: 8000 } }],
    rest: [{ schema: exposePortBody, field: 'hostPort', base: { port: 8000 } }],
    engine: [(api, c, v) => api.exposePort(c.sandbox, 9000, { hostPort: v })],
  },
  {
    bound: LIMITS.memoryMb,
    mcp: [
      { tool: 'sandbox_create', arg: 'memory_mb' },
      { tool: 'sandbox_fork', arg: 'memory_mb' },
      { tool: 'snapshot_restore', arg: 'memory_mb', base: { snapshot: 's' } },
    ],
    rest: [
      { schema: createSandboxBody, field: 'memoryMb' },
      { schema: forkBody, field: 'memoryMb' },
    ],
    engine: [
      (api, _c, v) => api.createSandbox({ memoryMb: v }),
      (api, c, v) => api.forkSandbox(c.sandbox, { memoryMb: v }),
    ],
  },
  {
    bound: LIMITS.cpus,
    mcp: [{ tool: 'sandbox_create', arg: 'cpus' }],
    rest: [
      { schema: createSandboxBody, field: 'cpus' },
      { schema: forkBody, field: 'cpus' },
    ],
    engine: [
      (api, _c, v) => api.createSandbox({ cpus: v }),
      (api, c, v) => api.forkSandbox(c.sandbox, { cpus: v }),
    ],
  },
  {
    bound: LIMITS.pids,
    mcp: [{ tool: 'sandbox_create', arg: 'pids' }],
    rest: [
      { schema: createSandboxBody, field: 'pids' },
      { schema: forkBody, field: 'pids' },
    ],
    engine: [
      (api, _c, v) => api.createSandbox({ pids: v }),
      (api, c, v) => api.forkSandbox(c.sandbox, { pids: v }),
    ],
  },
  {
    bound: LIMITS.ttlSeconds,
    mcp: [
      { tool: 'sandbox_create', arg: 'ttl_s' },
      { tool: 'sandbox_extend', arg: 'ttl_s' },
      { tool: 'sandbox_fork', arg: 'ttl_s' },
      { tool: 'snapshot_restore', arg: 'ttl_s', base: { snapshot: 's' } },
    ],
    rest: [
      { schema: createSandboxBody, field: 'ttlSeconds' },
      { schema: extendBody, field: 'ttlSeconds' },
      { schema: forkBody, field: 'ttlSeconds' },
    ],
    engine: [
      (api, _c, v) => api.createSandbox({ ttlSeconds: v }),
      (api, c, v) => api.extendSandbox(c.sandbox, v),
      (api, c, v) => api.forkSandbox(c.sandbox, { ttlSeconds: v }),
    ],
  },
  {
    bound: LIMITS.timeoutSeconds,
    mcp: [
      { tool: 'exec_run', arg: 'timeout_s', base: { command: 'true' } },
      { tool: 'exec_start', arg: 'timeout_s', base: { command: 'true' } },
      { tool: 'code_run', arg: 'timeout_s', base: { code: '1' } },
    ],
    rest: [
      { schema: execBody, field: 'timeoutSeconds', base: { argv: ['true'] } },
      { schema: codeBody, field: 'timeoutSeconds', base: { code: '1' } },
    ],
    engine: [
      (api, c, v) => api.exec(c.sandbox, { argv: ['true'], timeoutSeconds: v }),
      (api, c, v) => api.runCode(c.sandbox, { code: '1', timeoutSeconds: v }),
      (api, c, v) => api.runCode(c.sandbox, { language: 'bash', code: 'true', timeoutSeconds: v }),
    ],
  },
  {
    bound: LIMITS.maxOutputBytes,
    // MCP has its own, smaller bound (mcpOutputBytes, below): a tool result stays a few MiB.
    mcp: [],
    rest: [
      { schema: execBody, field: 'maxOutputBytes', base: { argv: ['true'] } },
      { schema: codeBody, field: 'maxOutputBytes', base: { code: '1' } },
    ],
    engine: [
      (api, c, v) => api.exec(c.sandbox, { argv: ['true'], maxOutputBytes: v }),
      (api, c, v) => api.runCode(c.sandbox, { code: '1', maxOutputBytes: v }),
    ],
  },
  {
    bound: LIMITS.mcpOutputBytes,
    mcp: [
      { tool: 'exec_run', arg: 'max_output_bytes', base: { command: 'true' } },
      { tool: 'exec_start', arg: 'max_output_bytes', base: { command: 'true' } },
      { tool: 'code_run', arg: 'max_output_bytes', base: { code: '1' } },
    ],
    // Within the engine's own bound (maxOutputBytes): REST and the engine accept more.
    rest: [],
    engine: [],
  },
  {
    bound: LIMITS.spoolBytes,
    // Not an MCP argument: an MCP caller reads a long stream from its spool file at the daemon's size.
    mcp: [],
    rest: [{ schema: execBody, field: 'spoolBytes', base: { argv: ['true'] } }],
    engine: [(api, c, v) => api.exec(c.sandbox, { argv: ['true'], spoolBytes: v })],
  },
  {
    bound: LIMITS.ttyRows,
    // Not an MCP argument: terminals are the console's and REST's.
    mcp: [],
    rest: [{ schema: resizeBody, field: 'rows', base: { cols: 80 } }],
    engine: [(api, c, v) => api.startExec(c.sandbox, { argv: ['true'], tty: { rows: v, cols: 80 } })],
  },
  {
    bound: LIMITS.ttyCols,
    mcp: [],
    rest: [{ schema: resizeBody, field: 'cols', base: { rows: 24 } }],
    engine: [(api, c, v) => api.startExec(c.sandbox, { argv: ['true'], tty: { rows: 24, cols: v } })],
  },
  {
    bound: LIMITS.forkChildren,
    mcp: [
      { tool: 'sandbox_fork', arg: 'n' },
      { tool: 'snapshot_restore', arg: 'n', base: { snapshot: 's' } },
    ],
    rest: [{ schema: forkBody, field: 'n' }],
    engine: [(api, c, v) => api.forkSandbox(c.sandbox, { n: v, memoryMb: 16 })],
  },
  {
    bound: LIMITS.pollWaitMs,
    // MCP has its own, shorter bound (mcpPollWaitMs, below).
    mcp: [],
    rest: [{ schema: pollQuery, field: 'wait_ms', query: true }],
    engine: [(api, c, v) => api.pollExec(c.sandbox, c.execId, { waitMs: v })],
  },
  {
    bound: LIMITS.mcpPollWaitMs,
    mcp: [{ tool: 'exec_poll', arg: 'wait_ms', base: { exec_id: 'ex-1' } }],
    // Within the engine's own bound (pollWaitMs).
    rest: [],
    engine: [],
  },
  {
    bound: LIMITS.pool,
    // Not an MCP argument: the canonical tools/list is at its token budget, and a warm pool is the
    // host's configuration (CLI and REST), not an agent's.
    mcp: [],
    rest: [{ schema: defineTemplateBody, field: 'pool', base: { name: 'pooled' } }],
    engine: [(api, _c, v) => api.defineTemplate({ name: 'pooled', pool: v })],
  },
  {
    bound: LIMITS.afterSeq,
    mcp: [{ tool: 'exec_poll', arg: 'after_seq', base: { exec_id: 'ex-1' } }],
    rest: [{ schema: pollQuery, field: 'after_seq', query: true }],
    engine: [(api, c, v) => api.pollExec(c.sandbox, c.execId, { afterSeq: v })],
  },
];

function edges(b: Bound): { v: number; ok: boolean; label: string }[] {
  const eps = b.integer ? 1 : 0.01;
  return [
    { v: b.min - eps, ok: false, label: 'min−ε' },
    { v: b.min, ok: true, label: 'min' },
    { v: b.max, ok: true, label: 'max' },
    { v: b.max + eps, ok: false, label: 'max+ε' },
  ];
}

describe('limits: MCP, REST/OpenAPI and the engine agree at every bound’s edges', () => {
  let t: TestEngine;
  let ctx: { sandbox: string; execId: string };
  before(async () => {
    t = createTestEngine();
    const sandbox = (await t.api.createSandbox({ name: 'edge' })).id;
    const ex = await t.api.startExec(sandbox, { argv: ['true'] });
    await t.api.pollExec(sandbox, ex.id, { waitMs: 10_000 });
    ctx = { sandbox, execId: ex.id };
  });
  after(() => t.close());

  for (const s of SURFACES) {
    it(`${s.bound.field}: ${s.bound.min} to ${s.bound.max}`, async () => {
      for (const e of edges(s.bound)) {
        for (const m of s.mcp) {
          const tool = CANONICAL_TOOLS.find((x) => x.name === m.tool);
          assert.ok(tool, m.tool);
          const r = tool.input.safeParse({ ...m.base, [m.arg]: e.v });
          assert.equal(r.success, e.ok, `MCP ${m.tool}.${m.arg} at ${e.label} (${e.v})`);
        }
        for (const r of s.rest) {
          const value = r.query ? String(e.v) : e.v;
          const out = r.schema.safeParse({ ...r.base, [r.field]: value });
          assert.equal(out.success, e.ok, `REST ${r.field} at ${e.label} (${e.v})`);
        }
        for (const [i, call] of s.engine.entries()) {
          const refused = await call(t.api, ctx, e.v).then(
            () => false,
            (err: unknown) => {
              assert.ok(isForkboxError(err), String(err));
              if (err.code !== 'invalid_argument') throw err;
              assert.match(err.message, new RegExp(s.bound.field));
              return true;
            },
          );
          assert.equal(!refused, e.ok, `engine call ${i} at ${e.label} (${e.v})`);
        }
      }
    });
  }

  it('MCP-only bounds lie within the engine’s', () => {
    for (const [mcp, engine] of [
      [LIMITS.mcpOutputBytes, LIMITS.maxOutputBytes],
      [LIMITS.mcpPollWaitMs, LIMITS.pollWaitMs],
    ] as const) {
      assert.equal(mcp.field, engine.field);
      assert.ok(mcp.min >= engine.min && mcp.max <= engine.max, mcp.field);
    }
  });

  it('covers every bound', () => {
    assert.deepEqual(
      SURFACES.map((s) => s.bound.field).sort(),
      Object.values(LIMITS)
        .map((b) => b.field)
        .sort(),
    );
  });
});

/**
 * The agent (Python, inside every sandbox) enforces the same numbers: it is handed them in FORKBOX_BOUNDS
 * (domain/limits.ts agentBoundsEnv) and keeps none of its own. Asked here by importing its modules in a
 * real interpreter with the environment the daemon gives a template, and reading what each module
 * enforces; and refused when the environment lacks them.
 */
describe('the agent enforces the host’s bounds', () => {
  const agentDir = fileURLToPath(new URL('../../src/agent/', import.meta.url));
  const ask = (env: Record<string, string>) =>
    spawnSync(
      'python3',
      [
        '-c',
        [
          'import json, sys',
          `sys.path.insert(0, ${JSON.stringify(agentDir)})`,
          'import os, protocol, repl, execs, netrelay, outstream',
          'print(json.dumps({"header": protocol.MAX_HEADER, "body": protocol.MAX_BODY,',
          ' "replDefault": repl.DEFAULT_MAX_OUTPUT, "replMax": repl.MAX_OUTPUT_LIMIT, "replSpool": repl.MAX_SPOOL_BYTES,',
          ' "execDefault": execs.DEFAULT_MAX_OUTPUT, "execMax": execs.MAX_OUTPUT_LIMIT, "execSpool": execs.MAX_SPOOL,',
          ' "tty": execs.MAX_TTY_SIDE, "relay": netrelay.MAX_CONNS, "tail": outstream.TAIL_MAX,',
          ' "leaked": "FORKBOX_BOUNDS" in os.environ}))',
        ].join('\n'),
      ],
      { encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } },
    );

  it('reads every bound it enforces from the host and hides them from what it runs', () => {
    const r = ask({ FORKBOX_BOUNDS: agentBoundsEnv() });
    assert.equal(r.status, 0, r.stderr);
    const b = AGENT_BOUNDS;
    assert.deepEqual(JSON.parse(r.stdout), {
      header: MAX_HEADER_BYTES,
      body: MAX_BODY_BYTES,
      replDefault: REPL_DEFAULT_OUTPUT_BYTES,
      replMax: LIMITS.maxOutputBytes.max,
      replSpool: LIMITS.spoolBytes.max,
      execDefault: DEFAULT_OUTPUT_BYTES,
      execMax: LIMITS.maxOutputBytes.max,
      execSpool: LIMITS.spoolBytes.max,
      tty: Math.max(LIMITS.ttyRows.max, LIMITS.ttyCols.max),
      relay: EGRESS.connections,
      tail: tailBudget(Number.MAX_SAFE_INTEGER),
      leaked: false,
    });
    assert.equal(b.outputBytes, LIMITS.maxOutputBytes.max);
  });

  it('refuses to start without them, saying why', () => {
    const none = ask({});
    assert.notEqual(none.status, 0);
    assert.match(none.stderr, /FORKBOX_BOUNDS is not set/);
    const partial = ask({ FORKBOX_BOUNDS: JSON.stringify({ frame_header_bytes: 1024 }) });
    assert.notEqual(partial.status, 0);
    assert.match(partial.stderr, /lacks positive integers for: frame_body_bytes/);
  });
});
