/**
 * Recovery at the MCP level: a real `forkbox serve --listen … --token-file …` child process, official SDK
 * clients over Streamable HTTP (2026-07-28, stateless) and over stdio (`forkbox mcp`, a daemon client),
 * execs in flight, REPL state and acknowledged writes; then SIGKILL of the daemon, a restart, and every
 * sandbox answers again with its files and REPL state, in-flight execs reported as ended. Also: SIGTERM
 * drains an in-flight `exec_run` before the daemon exits.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { openEngine } from '../../src/composition.ts';
import { mountsUnder } from '../../src/runtimes/native/host/mounts.ts';
import { withBulk } from '../helpers/mcp-result.ts';
import { forkboxMcpServer } from '../helpers/mcp-stdio.ts';
import { makeStateDir, nativeUnavailable, quietLog } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

const skip = nativeUnavailable();
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin/forkbox.js');
const TOKEN = 'tok-recovery-3c5e7a9b1d2f4e6a8c0b';
const text = (r: CallToolResult): string => (r.content[0]?.type === 'text' ? r.content[0].text : '');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((res) => {
    const t = setTimeout(() => res(false), ms);
    child.once('exit', () => {
      clearTimeout(t);
      res(true);
    });
  });
}

interface Exec {
  exec_id: string;
  state: string;
  exit_code: number | null;
  command: string[];
}

describe('MCP recovery: SIGKILL and SIGTERM of a serving daemon', { skip: skip ?? false }, () => {
  let stateDir: string;
  let base: string;
  let tokenFile: string;
  let daemon: ChildProcess | undefined;
  const clients: Client[] = [];
  let stdio: Client | undefined;
  const stdioErr: string[] = [];

  function logFile(): string {
    return join(stateDir, 'serve.log');
  }

  async function startDaemon(): Promise<ChildProcess> {
    const fd = openSync(logFile(), 'a');
    const child = spawn(
      process.execPath,
      [BIN, '--state-dir', stateDir, 'serve', '--listen', base.slice(7), '--token-file', tokenFile],
      { stdio: ['ignore', 'ignore', fd], cwd: ROOT },
    );
    closeSync(fd);
    const up = await waitFor(
      async () => {
        if (child.exitCode !== null) return 'exited';
        return fetch(`${base}/healthz`).then(
          (r) => (r.ok ? 'up' : undefined),
          () => undefined,
        );
      },
      { what: 'forkbox serve answers /healthz', timeoutMs: 60_000, intervalMs: 100 },
    ).catch((e: unknown) => {
      throw new Error(`${String(e)}: ${readFileSync(logFile(), 'utf8')}`);
    });
    if (up === 'exited') throw new Error(`forkbox serve exited: ${readFileSync(logFile(), 'utf8')}`);
    return child;
  }

  async function httpClient(): Promise<Client> {
    const client = new Client(
      { name: 'mcp-recovery-test', version: '1' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
        authProvider: { token: async () => TOKEN },
      }),
    );
    assert.equal(client.getProtocolEra(), 'modern');
    clients.push(client);
    return client;
  }

  async function ok<T>(client: Client, name: string, args: Record<string, unknown>): Promise<T> {
    const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
    assert.notEqual(r.isError, true, `${name}: ${text(r)}\nstderr: ${stdioErr.join('')}`);
    return withBulk(r) as T;
  }

  /** Wait until an exec whose command matches `re` is listed as running in `sandbox`. */
  async function runningExec(client: Client, sandbox: string | undefined, re: RegExp): Promise<Exec> {
    return waitFor(
      async () => {
        const { execs } = await ok<{ execs: Exec[] }>(client, 'exec_list', sandbox ? { sandbox } : {});
        const e = execs.find((x) => re.test(x.command.join(' ')));
        return e?.state === 'running' ? e : undefined;
      },
      { what: `an exec matching ${re} runs`, timeoutMs: 15_000, intervalMs: 100 },
    );
  }

  before(async () => {
    stateDir = makeStateDir();
    base = `http://127.0.0.1:${await freePort()}`;
    tokenFile = join(stateDir, 'tokens');
    writeFileSync(tokenFile, `${TOKEN} alice\n`, { mode: 0o600 });
    daemon = await startDaemon();
  });

  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await stdio?.close().catch(() => undefined);
    if (daemon && daemon.exitCode === null && daemon.signalCode === null) {
      daemon.kill('SIGTERM');
      if (!(await waitExit(daemon, 40_000))) {
        daemon.kill('SIGKILL');
        await waitExit(daemon, 5000);
      }
    }
    if (!stateDir) return;
    // Sandboxes and templates outlive the daemon by design: end them in-process, every tenant's.
    const opened = await openEngine({ stateDir, log: quietLog(), reapIntervalMs: 0 });
    await opened.close({ killSandboxes: true });
    const left = mountsUnder(stateDir);
    rmSync(stateDir, { recursive: true, force: true });
    assert.deepEqual(left, [], 'nothing left mounted');
  });

  it('SIGKILL + restart: sandboxes, files and REPL state are back; in-flight execs are reported', async (t) => {
    // ── HTTP (2026-07-28) client: a named sandbox and the token's default sandbox ──
    const http = await httpClient();
    const named = await ok<{ id: string }>(http, 'sandbox_create', { name: 'rec-http' });
    await ok(http, 'code_run', { sandbox: named.id, code: 'state = {"k": 6 * 7}' });
    const acked = await ok<{ etag: string }>(http, 'file_write', {
      sandbox: named.id,
      path: '/root/ack.txt',
      content: 'acknowledged before the kill',
    });
    await ok(http, 'file_write', { path: '/root/default.txt', content: 'in the default sandbox' });
    await ok(http, 'code_run', { code: 'dflt = "default-repl"' });
    const bg = await ok<Exec>(http, 'exec_start', {
      sandbox: named.id,
      command: 'sleep 10; echo finished > /root/bg-done.txt',
    });
    assert.equal(bg.state, 'running');
    // An exec_run that is mid-flight when the daemon dies: its response never comes.
    const midFlight = http
      .callTool({
        name: 'exec_run',
        arguments: { sandbox: named.id, command: 'sleep 8; echo finished > /root/run-done.txt' },
      })
      .then(
        (r) => ({ ok: true as const, r: r as CallToolResult }),
        (e: unknown) => ({ ok: false as const, e }),
      );
    const run = await runningExec(http, named.id, /run-done/);

    // ── stdio client (`forkbox mcp`, attached to this daemon through its socket, in a session) ──
    const transport = new StdioClientTransport(forkboxMcpServer(stateDir, { stderr: 'pipe' }));
    transport.stderr?.on('data', (d: Buffer) => stdioErr.push(d.toString()));
    stdio = new Client({ name: 'mcp-recovery-stdio', version: '1' });
    await stdio.connect(transport);
    await ok(stdio, 'code_run', { code: 'stdio_var = [1, 2, 3]' });
    await ok(stdio, 'file_write', { path: '/root/stdio.txt', content: 'stdio acked' });
    const stdioBg = await ok<Exec>(stdio, 'exec_start', { command: 'sleep 10; echo x > /root/stdio-bg.txt' });

    // ── SIGKILL the daemon, start it again ──
    const pid = Number(readFileSync(join(stateDir, 'lock.pid'), 'utf8').trim());
    assert.equal(pid, daemon?.pid, 'the daemon we started owns the state dir');
    daemon?.kill('SIGKILL');
    assert.ok(daemon && (await waitExit(daemon, 10_000)), 'the daemon died');
    const cut = await midFlight;
    t.diagnostic(
      `exec_run in flight at the kill: ${cut.ok ? `answered isError=${cut.r.isError} ${text(cut.r)}` : `rejected (${String(cut.e)})`}`,
    );
    assert.ok(!cut.ok || cut.r.isError === true, 'a call cut by the kill never reports success');
    const killedAt = Date.now();
    daemon = await startDaemon();
    t.diagnostic(`daemon back in ${Date.now() - killedAt} ms`);

    // ── reconnect over HTTP: everything acknowledged is there ──
    const http2 = await httpClient();
    const { sandboxes } = await ok<{ sandboxes: { id: string; name: string | null; state: string }[] }>(
      http2,
      'sandbox_list',
      {},
    );
    assert.equal(sandboxes.find((s) => s.id === named.id)?.state, 'running');
    const f = await ok<{ content: string; etag: string }>(http2, 'file_read', {
      sandbox: 'rec-http',
      path: '/root/ack.txt',
    });
    assert.equal(f.content, 'acknowledged before the kill');
    assert.equal(f.etag, acked.etag);
    const v = await ok<{ value: string }>(http2, 'code_run', { sandbox: named.id, code: 'state["k"]' });
    assert.equal(v.value, '42');

    // In-flight execs: ended, and said so: `interrupted` (killed at the restart) or `exited` (ended on its
    // own while the daemon was down; its real status was kept by the agent). Which we saw is reported.
    const polled = await ok<{ exec: Exec; done: boolean }>(http2, 'exec_poll', {
      sandbox: named.id,
      exec_id: bg.exec_id,
    });
    t.diagnostic(`exec_start (10 s) after restart: state=${polled.exec.state}`);
    assert.ok(['interrupted', 'exited'].includes(polled.exec.state), polled.exec.state);
    assert.equal(polled.done, true);
    const polledRun = await ok<{ exec: Exec; done: boolean }>(http2, 'exec_poll', {
      sandbox: named.id,
      exec_id: run.exec_id,
    });
    t.diagnostic(`exec_run (8 s) after restart: state=${polledRun.exec.state}`);
    assert.ok(['interrupted', 'exited'].includes(polledRun.exec.state), polledRun.exec.state);

    // The token's default sandbox: still there with its file and REPL state, and — what a client sees —
    // a call without `sandbox` lands in it again.
    const dflt = await ok<{ content: string }>(http2, 'file_read', { path: '/root/default.txt' });
    assert.equal(dflt.content, 'in the default sandbox');
    const dv = await ok<{ value: string }>(http2, 'code_run', { code: 'dflt' });
    assert.equal(dv.value, "'default-repl'");
    const defaults = await ok<{ sandboxes: unknown[] }>(http2, 'sandbox_list', {
      labels: { 'forkbox.mcp-default': 'true' },
    });
    assert.equal(defaults.sandboxes.length, 1, 'the default sandbox was adopted, not created again');

    // ── stdio: the same `forkbox mcp` process re-attached its session; its sandbox is kept ──
    const sv = await ok<{ value: string }>(stdio, 'code_run', { code: 'sum(stdio_var)' });
    assert.equal(sv.value, '6');
    const sf = await ok<{ content: string }>(stdio, 'file_read', { path: '/root/stdio.txt' });
    assert.equal(sf.content, 'stdio acked');
    const sp = await ok<{ exec: Exec }>(stdio, 'exec_poll', { exec_id: stdioBg.exec_id });
    assert.ok(['interrupted', 'exited'].includes(sp.exec.state), sp.exec.state);

    // After the 60 s re-attach window a session nobody re-attached would be ended; ours was re-attached
    // well within it, so nothing of it may be killed later either: checked cheaply via its record.
    const live = await ok<{ sandboxes: { state: string; labels: Record<string, string> }[] }>(
      stdio,
      'sandbox_list',
      {},
    );
    assert.ok(
      live.sandboxes.some((s) => s.labels['forkbox.mcp-default'] === 'true' && s.state === 'running'),
    );
  });

  it('SIGTERM drains an exec_run in flight, then the daemon exits 0', async () => {
    const http = await httpClient();
    const sb = await ok<{ id: string }>(http, 'sandbox_create', { name: 'drain' });
    const call = http.callTool({
      name: 'exec_run',
      arguments: { sandbox: sb.id, command: 'sleep 2; echo drained' },
    }) as Promise<CallToolResult>;
    await runningExec(http, sb.id, /drained/);
    const child = daemon as ChildProcess;
    child.kill('SIGTERM');
    const r = await call;
    assert.notEqual(r.isError, true, text(r));
    const out = withBulk(r) as { exit_code: number; stdout: string; duration_ms: number };
    assert.equal(out.exit_code, 0);
    assert.equal(out.stdout, 'drained\n');
    assert.ok(await waitExit(child, 40_000), 'the daemon exits after draining');
    assert.equal(child.exitCode, 0, readFileSync(logFile(), 'utf8').slice(-2000));
    // A new request is refused once it has stopped.
    await assert.rejects(fetch(`${base}/healthz`));
  });
});
