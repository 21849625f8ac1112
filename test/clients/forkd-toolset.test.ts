/**
 * forkd's documented flow, run unchanged by the kind of client forkd's users had (the v1 TypeScript SDK
 * over stdio) against `forkbox mcp --toolset forkd`, a client of a real daemon with the native runtime:
 * spawn_sandboxes → eval_code → branch_sandbox → spawn_sandboxes from the branch → the children see the
 * parent's variables and files → wait_for_text → kill_sandbox; plus create_snapshot (its VM arguments
 * ignored and said so), ping_sandbox's numpy version and forkd's error convention.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { forkboxMcpServer } from '../helpers/mcp-stdio.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';

const skip = nativeUnavailable();

type Json = Record<string, unknown>;
interface Result {
  isError?: boolean;
  structuredContent?: unknown;
  content: { type: string; text?: string }[];
}

describe('forkd toolset over stdio (v1 SDK, real daemon)', { skip: skip ?? false }, () => {
  let stateDir: string;
  let daemon: ServedDaemon | undefined;
  let client: Client;

  const call = async (name: string, args: Json) =>
    (await client.callTool({ name, arguments: args }, CallToolResultSchema, {
      timeout: 120_000,
    })) as Result;
  /** forkd's value: the JSON of the one text block. */
  const ok = async <T = Json>(name: string, args: Json): Promise<T> => {
    const r = await call(name, args);
    assert.notEqual(r.isError, true, `${name}: ${r.content[0]?.text}`);
    assert.equal(r.content.length, 1, `${name}: one text block`);
    return JSON.parse(r.content[0]?.text ?? '') as T;
  };

  before(async () => {
    stateDir = makeStateDir();
    daemon = await startServe(stateDir);
    client = new Client({ name: 'forkd-user', version: '1' });
    await client.connect(
      new StdioClientTransport(forkboxMcpServer(stateDir, { extraArgs: ['--toolset', 'forkd'] })),
    );
  });
  after(async () => {
    await client?.close().catch(() => undefined);
    await stopServeAndClean(daemon?.child, stateDir);
  });

  it('spawn → eval → branch → spawn from the branch → children see the state → wait_for_text → kill', async () => {
    const { tools } = await client.listTools();
    assert.equal(tools.length, 11);

    const [parent, ...others] = await ok<Json[]>('spawn_sandboxes', { snapshot_tag: 'default' });
    assert.equal(others.length, 0);
    assert.ok(parent);
    assert.equal(parent.snapshot_tag, 'default');
    assert.equal(parent.memory_limit_mib, 256);
    const pid = parent.id as string;

    const ping = await ok('ping_sandbox', { sandbox_id: pid });
    assert.equal(ping.pong, true);
    assert.match(String(ping.numpy_version), /^\d+\.\d+/, 'the default image has numpy');

    assert.deepEqual(await ok('eval_code', { sandbox_id: pid, code: 'x = 41\nx + 1' }), {
      result: '42',
      error: null,
      exit_code: 0,
    });
    assert.equal(
      (await ok('eval_code', { sandbox_id: pid, code: 'numpy.zeros(3).tolist()' })).result,
      '[0.0, 0.0, 0.0]',
    );
    const failed = await ok('eval_code', { sandbox_id: pid, code: 'undefined_name' });
    assert.equal(failed.exit_code, 1);
    assert.match(String(failed.error), /^NameError: /);
    const echo = await ok('exec_command', {
      sandbox_id: pid,
      args: ['sh', '-c', 'echo kept > /tmp/f; cat /tmp/f'],
    });
    assert.deepEqual(echo, { stdout: 'kept\n', stderr: '', exit_code: 0 });

    const branch = await ok('branch_sandbox', { sandbox_id: pid, tag: 'br1' });
    assert.equal(branch.tag, 'br1');
    assert.equal(branch.branched_from, pid);
    assert.equal(branch.status, 'ready');
    assert.equal(typeof branch.pause_ms, 'number');
    const tags = (await ok<Json[]>('list_snapshots', {})).map((s) => s.tag);
    assert.ok(tags.includes('br1') && tags.includes('default'), tags.join());

    const children = await ok<Json[]>('spawn_sandboxes', { snapshot_tag: 'br1', n: 3 });
    assert.equal(children.length, 3);
    for (const c of children) {
      assert.equal(c.snapshot_tag, 'br1');
      const cid = c.id as string;
      assert.equal(
        (await ok('eval_code', { sandbox_id: cid, code: 'x' })).result,
        '41',
        "the parent's variable",
      );
      assert.equal((await ok('exec_command', { sandbox_id: cid, args: ['cat', '/tmp/f'] })).stdout, 'kept\n');
    }
    const first = children[0]?.id as string;
    // The child diverges; the parent does not see it.
    await ok('eval_code', { sandbox_id: first, code: 'x = 7' });
    assert.equal((await ok('eval_code', { sandbox_id: pid, code: 'x' })).result, '41');

    await ok('exec_command', {
      sandbox_id: first,
      args: ['sh', '-c', '(sleep 1; echo server READY >> /tmp/log) >/dev/null 2>&1 &'],
    });
    const seen = await ok('wait_for_text', {
      sandbox_id: first,
      path: '/tmp/log',
      marker: 'READY',
      timeout_secs: 30,
    });
    assert.equal(seen.found, true);
    assert.equal(seen.last_excerpt, 'server READY\n');
    const notSeen = await ok('wait_for_text', {
      sandbox_id: first,
      path: '/tmp/log',
      marker: 'NEVER',
      timeout_secs: 0.5,
      poll_interval_ms: 50,
    });
    assert.equal(notSeen.found, false);

    const live = (await ok<Json[]>('list_sandboxes', {})).map((s) => s.id);
    for (const id of [pid, ...children.map((c) => c.id as string)]) {
      assert.ok(live.includes(id), id);
      assert.deepEqual(await ok('kill_sandbox', { sandbox_id: id }), { id, killed: true });
    }
    const after = (await ok<Json[]>('list_sandboxes', {})).map((s) => s.id);
    assert.deepEqual(
      after.filter((id) => id === pid || children.some((c) => c.id === id)),
      [],
    );
    const gone = await call('get_sandbox', { sandbox_id: pid });
    assert.equal(gone.isError, true);
    assert.match(gone.content[0]?.text ?? '', /^Error executing tool get_sandbox: 404 /);
  });

  it('create_snapshot: a tag of the default image with numpy imported, VM arguments ignored and said so', async () => {
    const snap = await ok('create_snapshot', {
      tag: 'numpy-base',
      kernel: '/var/lib/forkd/vmlinux',
      rootfs: '/var/lib/forkd/rootfs.ext4',
      boot_wait_secs: 5,
    });
    assert.equal(snap.tag, 'numpy-base');
    assert.match(String(snap.warning), /kernel, rootfs, rw, tap and boot_wait_secs .* not used/);
    const [sb] = await ok<Json[]>('spawn_sandboxes', { snapshot_tag: 'numpy-base' });
    const id = sb?.id as string;
    // numpy is in the REPL's namespace without an import in the call (the prelude is a no-op here).
    assert.equal((await ok('eval_code', { sandbox_id: id, code: "'numpy' in dir()" })).result, 'True');
    await ok('kill_sandbox', { sandbox_id: id });
    const dup = await call('create_snapshot', { tag: 'numpy-base', kernel: 'k', rootfs: 'r' });
    assert.equal(dup.isError, true);
    assert.match(dup.content[0]?.text ?? '', /^Error executing tool create_snapshot: 409 /);
  });
});
