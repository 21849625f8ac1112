/**
 * Attack: path traversal through the file API — `../../`, `//`, absolute paths with `..`, `/./`,
 * backslashes, literal and URL-encoded (single and double) `..%2f`, NUL bytes, `/proc/<pid>/root` and the
 * host path of the sandbox's own upper layer — against a marker file this test writes on the host, through
 * every file operation (read, write, list, stat, move, delete, mkdir) of the engine API, the MCP tools
 * (file_read, file_write, file_list, file_stat, file_move, file_delete) and the REST routes.
 * Precedent: cloudcmd #474; cheasee-pi #1611 (absolute paths with `..`); Vite CVE-2023-34092 (`//`
 * bypass) (peers 6b #12).
 * Contained when: no answer or error shows the marker's content, size or a sibling's name (it is never
 * read, listed, stat'ed or moved), it is never changed or deleted, nothing is created beside it, and
 * writes land inside the sandbox (at the normalised path).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { createDefaultSandbox, createForkboxMcpServer } from '../../src/protocol/mcp/server.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type Listener, startListener } from '../../src/transports/http-listener.ts';
import { type HostMarker, hostMarker } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();

/** Every spelling of "the host's marker" a traversal might try. */
function traversals(m: HostMarker, upper: string): string[] {
  const rel = m.path.slice(1);
  return [
    `../../../../../../${rel}`,
    `//${rel}`,
    `/tmp/../../../../${rel}`,
    m.path,
    `/./${rel}`,
    `${m.dir}/./marker`,
    `..\\..\\..\\${rel.replaceAll('/', '\\')}`,
    `..%2f..%2f..%2f${rel}`,
    `%2e%2e/%2e%2e/%2e%2e/${rel}`,
    `..%252f..%252f${rel}`,
    `/proc/1/root${m.path}`,
    `/proc/self/root${m.path}`,
    `/proc/self/cwd/../../../${rel}`,
    `${upper}/../../../../../../${rel}`,
  ];
}

interface Surface {
  read(path: string): Promise<string>;
  write(path: string, data: string): Promise<void>;
  list(path: string): Promise<string>;
  stat(path: string): Promise<string>;
  move(from: string, to: string): Promise<void>;
  remove(path: string): Promise<void>;
}

describe('abuse: file API path traversal', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id: string;
  let m: HostMarker;
  let upper: string;
  let mcp: Client;
  let closeMcp: () => Promise<void>;
  let listener: Listener;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    id = (await api.createSandbox({})).id;
    m = hostMarker();
    upper = join(fx.stateDir, 'sandboxes', id, 'upper');
    const server = createForkboxMcpServer({ api, defaults: createDefaultSandbox(), version: 'test' });
    const [ct, st] = InMemoryTransport.createLinkedPair();
    await server.connect(st);
    mcp = new Client({ name: 'abuse', version: '1' });
    await mcp.connect(ct);
    closeMcp = () => server.close();
    listener = await startListener({
      engine: fx.opened.engine,
      version: 'test',
      host: '127.0.0.1',
      port: 0,
      mcp: { sessionIdleMs: 60_000 },
    });
  });
  after(async () => {
    await mcp?.close();
    await closeMcp?.();
    await listener?.close(2000);
    m?.remove();
    await fx?.close();
  });

  const engineSurface = (): Surface => ({
    read: async (p) => (await api.readFile(id, p)).data.toString('utf8'),
    write: async (p, d) => void (await api.writeFile(id, p, Buffer.from(d), { createDirs: true })),
    list: async (p) => JSON.stringify(await api.listFiles(id, p, { recursive: true })),
    stat: async (p) => JSON.stringify(await api.statFile(id, p)),
    move: (from, to) => api.moveFile(id, from, to, { overwrite: true }),
    remove: (p) => api.deleteFile(id, p, { recursive: true }),
  });

  const mcpSurface = (): Surface => {
    const tool = async (name: string, args: Record<string, unknown>) => {
      const r = (await mcp.callTool({ name, arguments: { sandbox: id, ...args } })) as CallToolResult;
      const text = r.content[0]?.type === 'text' ? r.content[0].text : '';
      if (r.isError) throw new Error(text);
      return JSON.stringify(r.structuredContent ?? text);
    };
    return {
      read: (p) => tool('file_read', { path: p }),
      write: async (p, d) => void (await tool('file_write', { path: p, content: d, create_dirs: true })),
      list: (p) => tool('file_list', { path: p, recursive: true }),
      stat: (p) => tool('file_stat', { path: p }),
      move: async (from, to) => void (await tool('file_move', { from, to, overwrite: true })),
      remove: async (p) => void (await tool('file_delete', { path: p, recursive: true })),
    };
  };

  /** Every operation with every traversal: never the secret, never a change on the host. */
  async function attack(s: Surface, label: string): Promise<void> {
    const attempt = async (what: string, f: () => Promise<unknown>) => {
      try {
        const got = await f();
        assert.ok(!m.leaked(got), `${label} ${what} leaked the host marker: ${JSON.stringify(got)}`);
      } catch (e) {
        assert.ok(!m.leaked((e as Error).message), `${label} ${what} leaked the host marker in an error`);
      }
      assert.ok(m.untouched(), `${label} ${what} changed the host marker or wrote beside it`);
    };
    await api.writeFile(id, '/tmp/bait', Buffer.from('bait'));
    for (const p of traversals(m, upper)) {
      await attempt(`read ${p}`, () => s.read(p));
      await attempt(`list ${p}`, () => s.list(p.slice(0, p.lastIndexOf('marker')) || '/'));
      await attempt(`stat ${p}`, () => s.stat(p));
      await attempt(`move ${p} → /tmp/stolen`, async () => {
        await s.move(p, '/tmp/stolen');
        return s.read('/tmp/stolen');
      });
      await attempt(`move /tmp/bait → ${p}`, () =>
        s.move('/tmp/bait', p).finally(() => s.write('/tmp/bait', 'bait')),
      );
      await attempt(`write ${p}`, () => s.write(p, 'planted'));
      await attempt(`write beside ${p}`, () => s.write(`${p}.new`, 'planted'));
      await attempt(`delete ${p}`, () => s.remove(p));
      await attempt(`mkdir beside ${p}`, () => api.mkdir(id, `${p}.d`));
    }
  }

  it('the engine API never reaches the host marker', async () => {
    await attack(engineSurface(), 'api');
  });

  it('the MCP file tools never reach the host marker', async () => {
    await attack(mcpSurface(), 'mcp');
  });

  it('REST with URL-encoded, double-encoded and NUL paths never reaches the host marker', async () => {
    const base = `${listener.server.url}/v1/sandboxes/${id}/files`;
    const rel = m.path.slice(1);
    const raw = [
      `..%2F..%2F..%2F..%2F${encodeURIComponent(rel)}`,
      `%2e%2e%2f%2e%2e%2f%2e%2e%2f${rel}`,
      `%252e%252e%252f%252e%252e%252f${rel}`,
      `%2F%2F${rel}`,
      `..%5c..%5c..%5c${rel}`,
      `${encodeURIComponent(m.path)}%00.txt`,
      `/tmp/%2e%2e/%2e%2e/%2e%2e/${rel}`,
    ];
    for (const q of raw) {
      const calls: [string, string, string, string?][] = [
        ['GET', 'read', `${base}/content?path=${q}`],
        ['GET', 'stat', `${base}/stat?path=${q}`],
        ['GET', 'list', `${base}/list?path=${q.slice(0, q.lastIndexOf('marker'))}&recursive=1`],
        ['PUT', 'write', `${base}/content?path=${q}.new&create_dirs=1`, 'planted'],
        ['DELETE', 'delete', `${base}?path=${q}`],
      ];
      for (const [method, what, url, body] of calls) {
        const r = await fetch(url, { method, ...(body === undefined ? {} : { body }) });
        const text = await r.text();
        assert.ok(!m.leaked(text), `REST ${what} ${q} leaked the host marker (${r.status}): ${text}`);
        assert.ok(m.untouched(), `REST ${what} ${q} changed the host marker or wrote beside it`);
      }
    }
  });

  it('a traversal write lands inside the sandbox, at the normalised path', async () => {
    const rel = m.path.slice(1);
    await api.writeFile(id, `../../../../${rel}`, Buffer.from('landed inside'), { createDirs: true });
    const inside = await api.exec(id, { argv: ['cat', m.path] });
    assert.equal(inside.stdout, 'landed inside');
    assert.equal((await api.readFile(id, m.path)).data.toString(), 'landed inside');
    assert.ok(m.untouched());
  });
});
