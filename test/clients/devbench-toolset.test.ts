/**
 * MCP DevBench's documented flow, run unchanged by the kind of client its users had (the v1 TypeScript
 * SDK over stdio) against `forkbox mcp --toolset devbench`, a client of a real daemon with the native
 * runtime: spawn → exec_start with an idempotency key, twice (one exec) → exec_poll until complete →
 * fs_write, fs_read, then fs_write with a stale ETag refused → kill; and the audit events DevBench wrote
 * (its JSON `audit_event` log lines) seen on the server's log.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { forkboxMcpServer } from '../helpers/mcp-stdio.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

const skip = nativeUnavailable();

type Json = Record<string, unknown>;
interface Result {
  isError?: boolean;
  content: { type: string; text?: string }[];
}

describe('devbench toolset over stdio (v1 SDK, real daemon)', { skip: skip ?? false }, () => {
  let stateDir: string;
  let daemon: ServedDaemon | undefined;
  let client: Client;
  let log = '';

  const call = async (name: string, input?: Json) =>
    (await client.callTool(
      { name, arguments: input === undefined ? {} : { input_data: input } },
      CallToolResultSchema,
      { timeout: 120_000 },
    )) as Result;
  const ok = async <T = Json>(name: string, input?: Json): Promise<T> => {
    const r = await call(name, input);
    assert.notEqual(r.isError, true, `${name}: ${r.content[0]?.text}`);
    return JSON.parse(r.content[0]?.text ?? '') as T;
  };
  const auditEvents = (): Json[] =>
    log
      .split('\n')
      .filter((l) => l.includes('"audit_event"'))
      .map((l) => (JSON.parse(l) as { audit: Json }).audit);

  before(async () => {
    stateDir = makeStateDir();
    daemon = await startServe(stateDir);
    client = new Client({ name: 'devbench-user', version: '1' });
    const transport = new StdioClientTransport(
      forkboxMcpServer(stateDir, {
        extraArgs: ['--toolset', 'devbench'],
        stderr: 'pipe',
        env: { FORKBOX_LOG_LEVEL: 'info' },
      }),
    );
    transport.stderr?.on('data', (d: Buffer) => {
      log += d.toString('utf8');
    });
    await client.connect(transport);
  });
  after(async () => {
    await client?.close().catch(() => undefined);
    await stopServeAndClean(daemon?.child, stateDir);
  });

  it('spawn → exec_start twice with one key (one exec) → exec_poll → stale ETag refused → audit', async () => {
    const { tools } = await client.listTools();
    assert.equal(tools.length, 18);
    assert.equal((await ok('health')).status, 'healthy');

    const spawned = await ok('spawn', { image: 'debian', alias: 'dev-workspace', idempotency_key: 'sp-1' });
    assert.equal(spawned.status, 'running');
    assert.equal(spawned.alias, 'dev-workspace');
    const cid = spawned.container_id as string;
    assert.equal((await ok('spawn', { image: 'debian', idempotency_key: 'sp-1' })).container_id, cid);
    const attached = await ok('attach', {
      target: 'dev-workspace',
      client_name: 'my-client',
      session_id: 's-123',
    });
    assert.deepEqual(attached.roots, [`workspace:${cid}`]);

    const start = {
      container_id: cid,
      cmd: ['sh', '-c', 'echo run >> /workspace/runs; pwd'],
      idempotency_key: 'k1',
    };
    const first = await ok('exec_start', start);
    assert.equal(first.status, 'running');
    const again = await ok('exec_start', start);
    assert.equal(again.exec_id, first.exec_id, 'the same key: the same exec');

    let done: Json = {};
    const messages: Json[] = [];
    await waitFor(
      async () => {
        const after_seq = messages.length === 0 ? 0 : (messages[messages.length - 1]?.seq as number);
        done = await ok('exec_poll', { exec_id: first.exec_id, after_seq });
        messages.push(...(done.messages as Json[]));
        return done.complete === true;
      },
      { what: 'the exec completes', timeoutMs: 60_000, intervalMs: 100 },
    );
    const out = messages
      .filter((m) => m.stream === 'stdout')
      .map((m) => m.data)
      .join('');
    assert.equal(out, '/workspace\n', 'cwd defaults to /workspace');
    const end = messages[messages.length - 1];
    assert.equal(end?.complete, true);
    assert.equal(end?.exit_code, 0);
    assert.equal(typeof (end?.usage as Json | undefined)?.wall_ms, 'number');

    const runs = await ok('fs_read', { container_id: cid, path: '/workspace/runs' });
    assert.equal(runs.content, 'run\n', 'one exec ran, not two');

    const w1 = await ok('fs_write', {
      container_id: cid,
      path: 'notes/hello.py',
      content: "print('Hello')\n",
    });
    assert.equal(w1.size, 15);
    const read = await ok('fs_read', { container_id: cid, path: '/workspace/notes/hello.py' });
    assert.equal(read.etag, w1.etag);
    assert.equal(read.mime_type, 'text/x-python');
    const w2 = await ok('fs_write', {
      container_id: cid,
      path: '/workspace/notes/hello.py',
      content: "print('Hello, World!')\n",
      if_match_etag: w1.etag,
    });
    assert.notEqual(w2.etag, w1.etag);
    const stale = await call('fs_write', {
      container_id: cid,
      path: '/workspace/notes/hello.py',
      content: 'lost update\n',
      if_match_etag: w1.etag,
    });
    assert.equal(stale.isError, true);
    assert.match(
      stale.content[0]?.text ?? '',
      /^Error calling tool 'fs_write': File conflict at '\/workspace\/notes\/hello.py'/,
    );
    assert.equal(
      (await ok('fs_read', { container_id: cid, path: 'notes/hello.py' })).content,
      "print('Hello, World!')\n",
    );
    const outside = await call('fs_read', { container_id: cid, path: '/workspace/../etc/passwd' });
    assert.equal(outside.isError, true);
    assert.match(outside.content[0]?.text ?? '', /Path must be under \/workspace/);

    const stat = await ok('fs_stat', { container_id: cid, path: '/workspace/notes' });
    assert.equal(stat.is_dir, true);
    const listed = await ok('fs_list', { container_id: cid, path: '/workspace/notes' });
    assert.deepEqual(
      (listed.entries as Json[]).map((e) => e.path),
      ['/workspace/notes/hello.py'],
    );
    const status = await ok('system_status');
    assert.equal(status.active_containers, 1);
    assert.equal(status.active_attachments, 1);

    assert.deepEqual(await ok('kill', { container_id: cid, force: true }), { status: 'stopped' });

    await waitFor(() => auditEvents().some((e) => e.event_type === 'container_kill'), {
      what: 'the kill is audited',
    });
    const events = auditEvents();
    const types = events.map((e) => e.event_type);
    assert.deepEqual(
      types.filter((t) => t !== 'fs_read'),
      [
        'container_spawn',
        'container_attach',
        'exec_start',
        'exec_start',
        'fs_write',
        'fs_write',
        'container_kill',
      ],
    );
    const exec = events.find((e) => e.event_type === 'exec_start');
    assert.equal(exec?.container_id, cid);
    assert.equal((exec?.details as Json | undefined)?.exec_id, first.exec_id);
    assert.equal(typeof exec?.timestamp, 'string');
    assert.ok(!log.includes('echo run'), 'commands never reach the log');
    const attach = events.find((e) => e.event_type === 'container_attach');
    assert.equal(attach?.client_name, 'my-client');
    assert.equal(attach?.session_id, 's-123');
  });
});
