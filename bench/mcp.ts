/**
 * (7) MCP overhead: `exec_run` of `true` through MCP, against the engine call it wraps, all measured in
 * the same run, on the same warm sandbox where the surfaces share one:
 *
 * - stdio: a `forkbox mcp` process (official SDK stdio client → that process → daemon socket), against
 *   the daemon client's `exec` (what that process calls) on the same sandbox;
 * - HTTP: the daemon's /mcp (2026-07-28, bearer token), against the same daemon client `exec` and against
 *   an in-process `api.exec` (the engine call /mcp makes inside the daemon, here in this process).
 *
 * The surfaces are sampled round-robin (one of each per iteration) so load drifts hit all alike. This
 * benchmark starts its own `forkbox serve` with a TCP listener and a token file, on its own state dir.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { ForkboxApi } from '../src/service/api.ts';
import { createDaemonClient, type DaemonClient } from '../src/transports/daemon-client.ts';
import { socketPathFor } from '../src/transports/daemon-launcher.ts';
import { forkboxMcpServer } from '../test/helpers/mcp-stdio.ts';
import { type BenchContext, type Benchmark, execTrue, killAll } from './lib/context.ts';
import { cleanupStateDir, type Log, makeStateDir } from './lib/env.ts';
import { emptyResult, ratio, row } from './lib/report.ts';
import { sleep, summarize, timeMs } from './lib/stats.ts';

const NAME = 'mcp';
/** Target for the MCP overhead over stdio (p50 difference), ms. */
const STDIO_TARGET_MS = 2;
const WARMUP = 10;
const REPO = resolve(import.meta.dirname, '..');
const BIN = join(REPO, 'bin', 'forkbox.js');
// Tenant `default`: the tenant of the socket's callers, so all surfaces see and use the same sandbox.
const TOKEN = `bench-${process.pid}-0123456789abcdef`;

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((r) => {
    const t = setTimeout(() => r(false), ms);
    child.once('exit', () => {
      clearTimeout(t);
      r(true);
    });
  });
}

interface McpDaemon {
  stateDir: string;
  url: string;
  client: DaemonClient;
  stop(): Promise<void>;
}

async function startMcpDaemon(log: Log): Promise<McpDaemon> {
  const stateDir = makeStateDir('mcp');
  const tokenFile = join(stateDir, 'tokens');
  writeFileSync(tokenFile, `${TOKEN} default\n`, { mode: 0o600 });
  const listen = `127.0.0.1:${await freePort()}`;
  const logPath = join(stateDir, 'daemon.log');
  const fd = openSync(logPath, 'a');
  const child = spawn(
    process.execPath,
    [BIN, '--state-dir', stateDir, 'serve', '--listen', listen, '--token-file', tokenFile],
    { stdio: ['ignore', 'ignore', fd], env: { ...process.env } },
  );
  closeSync(fd);
  const client = createDaemonClient({ socketPath: socketPathFor(stateDir) });
  const url = `http://${listen}`;
  const stop = async () => {
    client.close();
    child.kill('SIGTERM');
    if (!(await waitExit(child, 15_000))) {
      child.kill('SIGKILL');
      await waitExit(child, 5000);
    }
    await cleanupStateDir(stateDir, log);
  };
  const t0 = Date.now();
  for (;;) {
    const up =
      (await client.health(500)) &&
      (await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      ));
    if (up) break;
    if (child.exitCode !== null || Date.now() - t0 > 30_000) {
      await stop();
      throw new Error(`forkbox serve --listen did not come up; see ${logPath}`);
    }
    await sleep(50);
  }
  log(`mcp: daemon pid ${child.pid} on ${stateDir}, listening on ${url}`);
  return { stateDir, url, client, stop };
}

async function connectStdio(stateDir: string, log: Log): Promise<Client> {
  const transport = new StdioClientTransport(forkboxMcpServer(stateDir, { stderr: 'pipe' }));
  transport.stderr?.on('data', (d: Buffer) => log(`forkbox mcp: ${d.toString().trim()}`));
  const c = new Client({ name: 'forkbox-bench-stdio', version: '1' });
  await c.connect(transport);
  return c;
}

async function connectHttp(url: string): Promise<Client> {
  const c = new Client(
    { name: 'forkbox-bench-http', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await c.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { authProvider: { token: async () => TOKEN } }),
  );
  if (c.getProtocolEra() !== 'modern') throw new Error('the HTTP client did not negotiate 2026-07-28');
  return c;
}

async function mcpExecTrue(c: Client, sandbox: string): Promise<void> {
  const r = (await c.callTool({
    name: 'exec_run',
    arguments: { sandbox, argv: ['true'] },
  })) as CallToolResult;
  const exit = (r.structuredContent as { exit_code?: number } | undefined)?.exit_code;
  if (r.isError === true || exit !== 0) {
    const t = r.content[0]?.type === 'text' ? r.content[0].text : '';
    throw new Error(`MCP exec_run true in ${sandbox} failed (exit ${exit}): ${t}`);
  }
}

interface Probe {
  label: string;
  fn: () => Promise<void>;
  samples: number[];
}

export const mcpOverhead: Benchmark = {
  name: NAME,
  description: 'MCP exec_run round trip (true) over stdio and HTTP vs the engine call it wraps',
  async run(ctx: BenchContext) {
    const out = emptyResult();
    const daemon = await startMcpDaemon(ctx.log);
    const inproc = ctx.surfaces.find((s) => s.name === 'in-process');
    let stdio: Client | undefined;
    let http: Client | undefined;
    let sandbox = '';
    let inprocSandbox = '';
    try {
      sandbox = (await daemon.client.createSandbox({})).id;
      if (inproc) inprocSandbox = (await inproc.api.createSandbox({})).id;
      stdio = await connectStdio(daemon.stateDir, ctx.log);
      http = await connectHttp(daemon.url);
      const s = stdio;
      const h = http;
      const probes: Probe[] = [
        { label: 'daemon client: exec true', fn: () => execTrue(daemon.client, sandbox), samples: [] },
        { label: 'MCP stdio: exec_run true', fn: () => mcpExecTrue(s, sandbox), samples: [] },
        { label: 'MCP HTTP: exec_run true', fn: () => mcpExecTrue(h, sandbox), samples: [] },
      ];
      if (inproc) {
        const api: ForkboxApi = inproc.api;
        probes.push({
          label: 'in-process: api.exec true',
          fn: () => execTrue(api, inprocSandbox),
          samples: [],
        });
      }
      for (let i = 0; i < WARMUP; i++) for (const p of probes) await p.fn();
      for (let i = 0; i < ctx.runs; i++) for (const p of probes) p.samples.push(await timeMs(p.fn));
      const rows = probes.map((p) => row(NAME, p.label, 'ms', p.samples));
      out.rows.push(...rows);
      const [clientRow, stdioRow, httpRow] = rows;
      if (clientRow && stdioRow && httpRow) {
        out.ratios.push(ratio(NAME, 'MCP stdio exec_run / daemon client exec', stdioRow, clientRow));
        out.ratios.push(ratio(NAME, 'MCP HTTP exec_run / daemon client exec', httpRow, clientRow));
      }

      const p50 = (label: string) => summarize(probes.find((p) => p.label === label)?.samples ?? []).p50;
      const base = p50('daemon client: exec true');
      const stdioOver = p50('MCP stdio: exec_run true') - base;
      const httpOver = p50('MCP HTTP: exec_run true') - base;
      // Paired per iteration too: less sensitive to drift than a difference of medians.
      const paired = (a: number, b: number) =>
        (probes[a]?.samples ?? []).map((v, i) => v - (probes[b]?.samples[i] ?? Number.NaN));
      out.rows.push(
        row(NAME, 'overhead, MCP stdio − daemon client (paired)', 'ms', paired(1, 0), STDIO_TARGET_MS),
      );
      out.rows.push(row(NAME, 'overhead, MCP HTTP − daemon client (paired)', 'ms', paired(2, 0)));
      out.notes.push(
        `MCP overhead over stdio (p50 difference vs the daemon client's exec it wraps): ${stdioOver.toFixed(2)} ms (target ≤ ${STDIO_TARGET_MS} ms: ${stdioOver <= STDIO_TARGET_MS ? 'ok' : 'MISSED'})`,
        `MCP overhead over HTTP (p50 difference vs the daemon client's exec): ${httpOver.toFixed(2)} ms`,
      );
      if (inproc) {
        const ip = p50('in-process: api.exec true');
        out.notes.push(
          `MCP HTTP vs the in-process engine call (/mcp calls the engine in the daemon's process): ${(p50('MCP HTTP: exec_run true') - ip).toFixed(2)} ms; MCP stdio vs in-process: ${(p50('MCP stdio: exec_run true') - ip).toFixed(2)} ms (the in-process sandbox is a different engine's, in this process)`,
        );
      }
    } finally {
      await stdio?.close().catch((e: unknown) => ctx.log(`stdio client close failed: ${String(e)}`));
      await http?.close().catch(() => undefined);
      if (inproc && inprocSandbox) await killAll(inproc.api, [inprocSandbox], ctx.log);
      if (sandbox) await killAll(daemon.client, [sandbox], ctx.log);
      await daemon.stop();
    }
    return out;
  },
};
