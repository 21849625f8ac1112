/**
 * The diff's surfaces over the real engine (fake runtime): REST route + daemon client (POST /v1/sandboxes/diff over a
 * unix socket), the sandbox_diff MCP tool, and the CLI's rendering. The diff itself is tested in
 * layer-diff.test.ts and, on the real engine, in test/integration/native-diff.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { renderDiff } from '../../src/cli/commands/diff.ts';
import { createDefaultSandbox, createForkboxMcpServer } from '../../src/protocol/mcp/server.ts';
import { createLocalApp } from '../../src/protocol/rest/local-app.ts';
import { createDaemonClient, type DaemonClient } from '../../src/transports/daemon-client.ts';
import { serveUnix, type UnixServer } from '../../src/transports/unix-server.ts';
import { createTestEngine, type RecordedApi } from '../helpers/test-engine.ts';

/** Two forks of one source: `two` changed /work/f (same size), added /work/new, removed /work/old. */
async function twoForks(api: RecordedApi, names: [string, string]): Promise<[string, string]> {
  const src = (await api.createSandbox({ name: `${names[0]}-src` })).id;
  await api.writeFile(src, '/work/f', Buffer.from('aaaa'), { createDirs: true });
  await api.mkdir(src, '/work/old');
  const r = await api.forkSandbox(src, { n: 2, names });
  await api.writeFile(names[1], '/work/f', Buffer.from('bbbb'));
  await api.writeFile(names[1], '/work/new', Buffer.from('new'), { mode: 0o755 });
  await api.deleteFile(names[1], '/work/old', { recursive: true });
  return r.children.map((c) => c.sandbox?.id ?? '') as [string, string];
}

describe('diff over REST and the daemon client', () => {
  let dir: string;
  let server: UnixServer;
  let client: DaemonClient;
  let api: RecordedApi;
  let a: string;
  let b: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fbx-diff-'));
    api = createTestEngine().api;
    server = await serveUnix(createLocalApp(api, { version: 't' }), join(dir, 'forkbox.sock'));
    client = createDaemonClient({ socketPath: join(dir, 'forkbox.sock') });
    [a, b] = await twoForks(api, ['one', 'two']);
  });
  after(async () => {
    client.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes both sides and the options through, and returns the result', async () => {
    const d = await client.diffSandboxes('one', 'two', { paths: ['/work'], unifiedFor: '/work/f' });
    assert.deepEqual(api.calls.at(-1), {
      method: 'diffSandboxes',
      args: ['one', 'two', { paths: ['/work'], unifiedFor: '/work/f' }],
    });
    assert.equal(d.a, a);
    assert.equal(d.b, b);
    assert.match(d.base ?? '', /^s-/, 'the layer both forks share');
    assert.deepEqual(
      d.modified.map((m) => [m.path, m.changes]),
      [['/work/f', ['content']]],
    );
    assert.deepEqual(
      d.added.map((m) => m.path),
      ['/work/new'],
    );
    assert.deepEqual(
      d.removed.map((m) => m.path),
      ['/work/old'],
    );
    assert.match(d.unified ?? '', /^--- a\/work\/f\n\+\+\+ b\/work\/f\n[\s\S]*-aaaa\n\+bbbb/);
  });

  it('rejects unknown fields and bad types with invalid_argument', async () => {
    await assert.rejects(
      client.diffSandboxes('one', 'two', { paths: 'x' } as unknown as { paths: string[] }),
      (e: { code?: string }) => e.code === 'invalid_argument',
    );
    await assert.rejects(
      client.diffSandboxes('one', 'two', { bogus: 1 } as unknown as { paths: string[] }),
      (e: { code?: string }) => e.code === 'invalid_argument',
    );
  });

  it('maps an unknown sandbox to not_found', async () => {
    await assert.rejects(
      client.diffSandboxes('one', 'nope'),
      (e: { code?: string }) => e.code === 'not_found',
    );
  });
});

describe('sandbox_diff MCP tool', () => {
  it('returns entries (path, type, size; changes of modified ones), counts and the unified diff once', async () => {
    const api = createTestEngine().api;
    const [x, y] = await twoForks(api, ['x', 'y']);
    const server = createForkboxMcpServer({ api, defaults: createDefaultSandbox(), version: '0.0.0-test' });
    const [ct, st] = InMemoryTransport.createLinkedPair();
    await server.connect(st);
    const mcp = new Client({ name: 'test', version: '1' });
    await mcp.connect(ct);
    try {
      const r = (await mcp.callTool({
        name: 'sandbox_diff',
        arguments: { a: 'x', b: 'y', paths: ['/work'], unified_for: '/work/f' },
      })) as CallToolResult;
      assert.notEqual(r.isError, true, JSON.stringify(r.content));
      const s = r.structuredContent as Record<string, unknown>;
      assert.equal(s.a, x);
      assert.equal(s.b, y);
      assert.deepEqual(s.counts, { added: 1, removed: 1, modified: 1 });
      assert.deepEqual(s.added, [{ path: '/work/new', type: 'file', size: 3 }]);
      assert.deepEqual(s.removed, [{ path: '/work/old', type: 'dir', size: 0 }]);
      assert.deepEqual(s.modified, [{ path: '/work/f', changes: ['content'] }]);
      assert.equal(s.truncated, false);
      // The unified diff is a text block of its own, not a field of structuredContent.
      assert.equal(s.unified, undefined);
      const block = r.content[1];
      assert.match(block?.type === 'text' ? block.text : '', /^--- a\/work\/f\n/);
      assert.deepEqual(api.calls.at(-1), {
        method: 'diffSandboxes',
        args: ['x', 'y', { paths: ['/work'], unifiedFor: '/work/f' }],
      });
    } finally {
      await mcp.close();
      await server.close();
    }
  });
});

describe('forkbox diff rendering', () => {
  it('lists A/D/M lines sorted by path, then the unified diff', () => {
    const out = renderDiff({
      a: 'sb-1',
      b: 'sb-2',
      base: 's-x',
      added: [{ path: '/b', b: { type: 'file', size: 2048, mode: 0o644 } }],
      removed: [{ path: '/a', a: { type: 'dir', size: 0, mode: 0o755 } }],
      modified: [
        {
          path: '/c',
          a: { type: 'file', size: 1, mode: 0o644 },
          b: { type: 'file', size: 3, mode: 0o600 },
          changes: ['size', 'mode'],
        },
      ],
      truncated: true,
      unified: '--- a/c\n+++ b/c\n',
    });
    const lines = out.split('\n');
    assert.match(lines[1] ?? '', /^D\s+\/a\s+dir/);
    assert.match(lines[2] ?? '', /^A\s+\/b\s+2 KiB/);
    assert.match(lines[3] ?? '', /^M\s+\/c\s+1 B → 3 B\s+size,mode$/);
    assert.match(out, /incomplete/);
    assert.ok(out.endsWith('--- a/c\n+++ b/c'));
  });

  it('says so when nothing differs', () => {
    const out = renderDiff({
      a: 'p',
      b: 'q',
      base: null,
      added: [],
      removed: [],
      modified: [],
      truncated: false,
    });
    assert.equal(out, 'no differences between p and q');
  });
});
