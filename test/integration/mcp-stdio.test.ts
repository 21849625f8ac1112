/**
 * `forkbox mcp` over stdio, as an MCP client launches it: the official SDK StdioClientTransport spawns
 * `node bin/forkbox.js --state-dir <temp> mcp`, which starts a daemon for that state dir and serves the
 * canonical tools through it. Also proves stdout carries only the protocol (any stray line would be a
 * parse error on the client) and that the connection's sandboxes go when it ends.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { openEngine } from '../../src/composition.ts';
import { CANONICAL_TOOLS } from '../../src/protocol/mcp/tools/index.ts';
import { createDaemonClient } from '../../src/transports/daemon-client.ts';
import { socketPathFor } from '../../src/transports/daemon-launcher.ts';
import { withBulk } from '../helpers/mcp-result.ts';
import { makeStateDir, nativeUnavailable, quietLog } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

const skip = nativeUnavailable();
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stop the daemon `forkbox mcp` started, then remove every template and sandbox it left, then the dir. */
async function stopDaemonAndClean(stateDir: string): Promise<void> {
  const pidFile = join(stateDir, 'lock.pid');
  const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : NaN;
  if (Number.isInteger(pid) && pid > 0 && processAlive(pid)) {
    process.kill(pid, 'SIGTERM');
    await waitFor(() => !processAlive(pid), {
      what: `daemon ${pid} exits on SIGTERM`,
      timeoutMs: 20_000,
      intervalMs: 100,
    }).catch(() => process.kill(pid, 'SIGKILL'));
  }
  const opened = await openEngine({ stateDir, log: quietLog() });
  await opened.close({ killSandboxes: true });
  rmSync(stateDir, { recursive: true, force: true });
}

const text = (r: CallToolResult): string => (r.content[0]?.type === 'text' ? r.content[0].text : '');

describe('forkbox mcp (stdio)', { skip: skip ?? false }, () => {
  let stateDir: string;
  let client: Client;
  let transport: StdioClientTransport;
  const stderr: string[] = [];
  const transportErrors: Error[] = [];

  before(async () => {
    stateDir = makeStateDir();
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
    transport = new StdioClientTransport({
      command: process.execPath,
      // No session grace: the connection's sandboxes end with it (the grace itself: sessions-grace.test.ts).
      args: [join(ROOT, 'bin/forkbox.js'), '--state-dir', stateDir, 'mcp', '--session-grace', '0'],
      env,
      cwd: ROOT,
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (d: Buffer) => stderr.push(d.toString()));
    client = new Client({ name: 'forkbox-stdio-test', version: '1' });
    client.onerror = (e) => transportErrors.push(e);
    await client.connect(transport);
  });

  after(async () => {
    await client?.close().catch(() => undefined);
    if (stateDir) await stopDaemonAndClean(stateDir);
  });

  async function ok<T>(name: string, args: Record<string, unknown>): Promise<T> {
    const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
    assert.notEqual(r.isError, true, `${name}: ${text(r)}\nstderr: ${stderr.join('')}`);
    return withBulk(r) as T;
  }

  it('lists the canonical tools', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const n of ['sandbox_create', 'exec_run', 'code_run', 'file_edit', 'system_status']) {
      assert.ok(names.includes(n), n);
    }
    assert.equal(tools.length, CANONICAL_TOOLS.length);
  });

  it('runs a command and Python code in the default sandbox, through the daemon', async () => {
    const r = await ok<{ stdout: string; exit_code: number }>('exec_run', {
      command: "python3 -c 'print(6*7)'",
    });
    assert.equal(r.stdout, '42\n');
    assert.equal(r.exit_code, 0);
    await ok('code_run', { code: 'import math\nr = 2' });
    const v = await ok<{ value: string }>('code_run', { code: 'round(math.pi * r * r, 3)' });
    assert.equal(v.value, '12.566');
    assert.deepEqual(transportErrors, [], 'nothing but protocol messages on stdout');
  });

  it("with --session-grace 0, removes the connection's sandboxes when it closes, except persistent ones", async () => {
    const api = createDaemonClient({ socketPath: socketPathFor(stateDir) });
    try {
      const kept = await ok<{ id: string; persistent: boolean }>('sandbox_create', {
        name: 'keep-me',
        persistent: true,
      });
      assert.equal(kept.persistent, true);
      const live = (await api.listSandboxes()).filter((s) => s.labels['forkbox.mcp-default'] === 'true');
      assert.equal(live.length, 1, 'the default sandbox exists while connected');
      const id = live[0]?.id ?? '';
      assert.equal(live[0]?.persistent, false);
      await client.close();
      await waitFor(async () => (await api.getSandbox(id)).state === 'killed', {
        what: `the default sandbox ${id} is killed once its client closed`,
        timeoutMs: 15_000,
        intervalMs: 200,
      });
      assert.equal((await api.getSandbox(kept.id)).state, 'running');
    } finally {
      api.close();
    }
  });
});
