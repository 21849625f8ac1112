/**
 * Podflare's documented flow, run unchanged by the kind of client its users had (the v1 TypeScript SDK
 * over stdio) against `forkbox mcp --toolset podflare`, a client of a real daemon with the native
 * runtime: run_python twice (state kept, in the session's lazily created sandbox) → fork n=3 → the
 * children diverge → diff → merge_into → upload/download of binary bytes; run_bash is a fresh process
 * each call; errors are Podflare's (the message, isError).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
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
  content: { type: string; text?: string }[];
}

describe('podflare toolset over stdio (v1 SDK, real daemon)', { skip: skip ?? false }, () => {
  let stateDir: string;
  let daemon: ServedDaemon | undefined;
  let client: Client;

  const call = async (name: string, args: Json) =>
    (await client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 120_000 })) as Result;
  const text = async (name: string, args: Json): Promise<string> => {
    const r = await call(name, args);
    assert.notEqual(r.isError, true, `${name}: ${r.content[0]?.text}`);
    assert.equal(r.content.length, 1, `${name}: one text block`);
    return r.content[0]?.text ?? '';
  };
  const ok = async <T = Json>(name: string, args: Json): Promise<T> =>
    JSON.parse(await text(name, args)) as T;

  before(async () => {
    stateDir = makeStateDir();
    daemon = await startServe(stateDir);
    client = new Client({ name: 'podflare-user', version: '1' });
    await client.connect(
      new StdioClientTransport(forkboxMcpServer(stateDir, { extraArgs: ['--toolset', 'podflare'] })),
    );
  });
  after(async () => {
    await client?.close().catch(() => undefined);
    await stopServeAndClean(daemon?.child, stateDir);
  });

  it('run_python keeps state → fork 3 → diff → merge_into → binary upload/download', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name),
      ['run_python', 'run_bash', 'fork', 'diff', 'merge_into', 'upload', 'download'],
    );

    assert.deepEqual(
      await ok('run_python', { code: "import numpy\nx = 20\nopen('/root/base.txt', 'w').write('base')" }),
      {
        stdout: '',
        stderr: '',
        exit_code: 0,
      },
    );
    assert.deepEqual(await ok('run_python', { code: 'x += 1\nprint(x * 2)' }), {
      stdout: '42\n',
      stderr: '',
      exit_code: 0,
    });
    const failed = await ok('run_python', { code: '1 / 0' });
    assert.equal(failed.exit_code, 1);
    assert.match(String(failed.stderr), /ZeroDivisionError/);
    assert.equal(
      (await ok('run_python', { code: 'print(x)' })).stdout,
      '21\n',
      'an exception keeps the state',
    );

    assert.equal((await ok('run_bash', { code: 'export A=1; echo "[$A]"' })).stdout, '[1]\n');
    assert.equal((await ok('run_bash', { code: 'echo "[$A]"' })).stdout, '[]\n', 'a fresh process each call');

    const kids = await ok<string[]>('fork', { n: 3 });
    assert.equal(kids.length, 3);
    assert.equal(new Set(kids).size, 3);
    const [k0, k1, k2] = kids as [string, string, string];
    for (const [i, k] of kids.entries()) {
      assert.equal(
        (await ok('run_python', { sandbox_id: k, code: 'print(x)' })).stdout,
        '21\n',
        "the parent's REPL",
      );
      await ok('run_python', { sandbox_id: k, code: `open('/root/child${i}.txt', 'w').write('${i}')` });
    }
    await ok('run_bash', { sandbox_id: k1, code: 'echo changed > /root/base.txt; rm /root/child1.txt' });

    // What k1 has relative to k0: its own files added, k0's removed, base.txt modified.
    const d = await ok<{ added: string[]; removed: string[]; modified: string[] }>('diff', {
      sandbox_id: k0,
      other_id: k1,
    });
    assert.deepEqual(d, { added: [], removed: ['/root/child0.txt'], modified: ['/root/base.txt'] });
    const fromParent = await ok<{ added: string[] }>('diff', { other_id: k2 });
    assert.deepEqual(fromParent.added, ['/root/child2.txt']);

    await ok('run_python', { sandbox_id: k2, code: 'x = 99' });
    const merged = await ok('merge_into', { winner: k2 });
    assert.equal(merged.merged, k2);
    // The session's sandbox now runs the winner: its REPL and its files.
    assert.equal((await ok('run_python', { code: 'print(x)' })).stdout, '99\n');
    assert.equal((await ok('run_bash', { code: 'ls /root' })).stdout, 'base.txt\nchild2.txt\n');
    const again = await call('merge_into', { winner: k2 });
    assert.equal(again.isError, true, 're-merging is refused');
    assert.match(again.content[0]?.text ?? '', /\(HTTP 4\d\d, \w+\)$/);

    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    assert.deepEqual(await ok('upload', { path: '/root/data/all.bin', content: bytes.toString('base64') }), {
      path: '/root/data/all.bin',
      size: 256,
    });
    const sum = await ok<{ stdout: string }>('run_bash', { code: 'sha256sum < /root/data/all.bin' });
    assert.equal(sum.stdout.slice(0, 64), createHash('sha256').update(bytes).digest('hex'));
    const b64 = await text('download', { path: '/root/data/all.bin' });
    assert.deepEqual(Buffer.from(b64, 'base64'), bytes, 'the same bytes back');

    const missing = await call('download', { path: '/root/nope' });
    assert.equal(missing.isError, true);
    assert.match(missing.content[0]?.text ?? '', /\(HTTP 404, not_found\)$/);
  });
});
