/**
 * What every tool call goes through (tool-runner.ts), over the real engine (fake runtime) and a real
 * SDK v2 client in memory: the argument pre-parser (null = absent, unknown names named, old map forms accepted), the
 * result shape (each bulk field once, a hard bound on the result), the progress heartbeat while a call
 * is silent, and the abort signal reaching the API when the client cancels.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { buildToolResult, cutMiddle, FIELD_META } from '../../src/protocol/mcp/kit/tool-result.ts';
import { createDefaultSandbox, createForkboxMcpServer } from '../../src/protocol/mcp/server.ts';
import type { ExecOutcome, ExecRequest, ForkboxApi, RunOptions } from '../../src/service/api.ts';
import { createTestEngine, type RecordedApi } from '../helpers/test-engine.ts';
import { waitFor } from '../helpers/wait-for.ts';

async function connect(api: ForkboxApi, runner = {}) {
  const server = createForkboxMcpServer({
    api,
    defaults: createDefaultSandbox(),
    version: '0.0.0-test',
    runner,
  });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(ct);
  // Progress notifications as they arrive on the wire, before the client drops those of ended requests.
  let progressOnWire = 0;
  const deliver = ct.onmessage;
  ct.onmessage = (m, extra) => {
    if ('method' in m && m.method === 'notifications/progress') progressOnWire++;
    deliver?.(m, extra);
  };
  return {
    client,
    progressOnWire: () => progressOnWire,
    call: async (name: string, args: Record<string, unknown> = {}) =>
      (await client.callTool({ name, arguments: args })) as CallToolResult,
    async close() {
      await client.close();
      await server.close();
    },
  };
}

const texts = (r: CallToolResult) => r.content.flatMap((b) => (b.type === 'text' ? [b.text] : []));
const execReqs = (api: RecordedApi) =>
  api.calls.filter((c) => c.method === 'exec').map((c) => c.args[1] as ExecRequest);

/** The engine's API with an exec that blocks until released, recording the run options it was given. */
function blockingExec(base: RecordedApi) {
  let release: (() => void) | undefined;
  const seen: RunOptions[] = [];
  const api: RecordedApi = {
    ...base,
    async exec(id, _req, opts) {
      await base.getSandbox(id);
      seen.push(opts ?? {});
      await new Promise<void>((resolve) => {
        release = resolve;
        opts?.signal?.addEventListener('abort', () => resolve(), { once: true });
      });
      const cancelled = opts?.signal?.aborted === true;
      const o: ExecOutcome = {
        execId: 'ex-1',
        exitCode: cancelled ? null : 0,
        signal: cancelled ? 9 : null,
        stdout: '',
        stderr: '',
        truncated: false,
        timedOut: false,
        oomKilled: false,
        cancelled,
        durationMs: 1,
        leftovers: 0,
      };
      return o;
    },
  };
  return { api, seen, release: () => release?.(), started: () => seen.length > 0 };
}

async function until(cond: () => boolean, what: string): Promise<void> {
  await waitFor(cond, { what, timeoutMs: 20_000, intervalMs: 10 });
}

describe('tool arguments', () => {
  it('null means absent', async () => {
    const api = createTestEngine().api;
    const c = await connect(api);
    try {
      const r = await c.call('exec_run', {
        argv: ['echo', 'a'],
        command: null,
        cwd: null,
        env: null,
        timeout_s: null,
      });
      assert.equal(r.isError, undefined, texts(r).join());
      assert.deepEqual(execReqs(api)[0]?.argv, ['echo', 'a']);
    } finally {
      await c.close();
    }
  });

  it('an unknown argument is a tool error naming it, the likely one and the valid ones', async () => {
    const api = createTestEngine().api;
    const c = await connect(api);
    try {
      const r = await c.call('exec_run', { comand: 'true' });
      assert.equal(r.isError, true);
      const msg = texts(r)[0] ?? '';
      assert.match(msg, /exec_run has no argument 'comand' \(did you mean 'command'\?\)/);
      assert.match(
        msg,
        /Its arguments are: sandbox, command, argv, cwd, env, max_output_bytes, stdin, timeout_s/,
      );
      assert.match(msg, /\[code: invalid_argument\]/);
      assert.equal(execReqs(api).length, 0, 'nothing ran');
    } finally {
      await c.close();
    }
  });

  it('env takes NAME=value items, {name, value} items and the old map form', async () => {
    const api = createTestEngine().api;
    const c = await connect(api);
    try {
      for (const env of [
        ['A=1', 'B=x=y'],
        [
          { name: 'A', value: '1' },
          { name: 'B', value: 'x=y' },
        ],
        { A: '1', B: 'x=y' },
      ]) {
        const r = await c.call('exec_run', { argv: ['true'], env });
        assert.equal(r.isError, undefined, texts(r).join());
      }
      for (const req of execReqs(api)) assert.deepEqual(req.env, { A: '1', B: 'x=y' });
      const bad = await c.call('exec_run', { argv: ['true'], env: ['1BAD=x'] });
      assert.equal(bad.isError, true);
      assert.match(texts(bad)[0] ?? '', /`env`: '1BAD' is not a valid environment variable name/);
    } finally {
      await c.close();
    }
  });
});

describe('tool results', () => {
  it('carry each stream once: a JSON summary pointing at one text block per stream', async () => {
    const api = createTestEngine().api;
    const c = await connect(api);
    try {
      const r = await c.call('exec_run', { command: 'echo hello; echo oops >&2' });
      const sc = r.structuredContent as Record<string, unknown>;
      assert.equal(sc.stdout, undefined, 'stdout is not in structuredContent');
      assert.equal(sc.exit_code, 0);
      const [summary, out, err] = r.content;
      assert.ok(summary?.type === 'text' && out?.type === 'text' && err?.type === 'text');
      const json = JSON.parse(summary.text) as Record<string, unknown>;
      assert.equal(json.stdout, '(content block 1, 6 bytes)');
      assert.equal(out.text, 'hello\n');
      assert.deepEqual(out._meta, { [FIELD_META]: 'stdout' });
      assert.equal(err.text, 'oops\n');
      assert.deepEqual(err._meta, { [FIELD_META]: 'stderr' });
      assert.equal(texts(r).filter((t) => t.includes('hello')).length, 1, 'stdout appears once');
    } finally {
      await c.close();
    }
  });

  it('stay under the bound whatever a tool returns, saying what was cut', () => {
    const big = `${'a'.repeat(3 << 20)}MIDDLE${'z'.repeat(3 << 20)}`;
    const ctl = '\u0001'.repeat(2 << 20); // JSON-escapes to 6x its size
    const r = buildToolResult(
      { structured: { stdout: big, stderr: ctl, exit_code: 0 } },
      ['stdout', 'stderr'],
      1 << 20,
    );
    const bytes = Buffer.byteLength(JSON.stringify(r));
    assert.ok(bytes <= 1 << 20, `result is ${bytes} bytes`);
    const out = texts(r)[1] ?? '';
    assert.ok(out.startsWith('aaa') && out.endsWith('zzz'), 'head and tail kept');
    assert.match(out, /\[forkbox: \d+ bytes cut here to keep the result under 1048576 bytes\]/);
    assert.equal(cutMiddle('short', 100, 'x'), 'short');
  });
});

describe('progress and cancellation', () => {
  it('a silent call sends progress heartbeats until it ends, none after', async (t) => {
    // The heartbeat's clock is the test's: each beat is a tick, and none can come after the result.
    t.mock.timers.enable({ apis: ['setInterval'] });
    const b = blockingExec(createTestEngine().api);
    const c = await connect(b.api, { progressIntervalMs: 20 });
    try {
      const beats: { progress: number; message?: string | undefined }[] = [];
      const call = c.client.callTool(
        { name: 'exec_run', arguments: { command: 'sleep 90' } },
        { onprogress: (p) => beats.push(p) },
      );
      await until(() => {
        t.mock.timers.tick(20);
        return beats.length >= 3;
      }, 'three heartbeats');
      b.release();
      const r = (await call) as CallToolResult;
      assert.equal(r.isError, undefined);
      const n = beats.length;
      const sent = c.progressOnWire();
      assert.equal(sent, n, 'every beat sent reached the caller');
      assert.deepEqual(
        beats.map((x) => x.progress),
        beats.map((_, i) => i + 1),
        'numbered upwards',
      );
      assert.match(beats[0]?.message ?? '', /^exec_run: running for \d+s/);
      t.mock.timers.tick(60_000);
      await c.client.ping(); // a round trip: a beat sent at the tick would arrive before its answer
      assert.equal(c.progressOnWire(), sent, 'no progress sent after the result');
    } finally {
      await c.close();
    }
  });

  it('output reaches progress messages', async () => {
    const api = createTestEngine().api;
    const c = await connect(api, { progressIntervalMs: 60_000, progressQuietMs: 0 });
    try {
      const beats: { message?: string | undefined }[] = [];
      await c.client.callTool(
        { name: 'exec_run', arguments: { argv: ['echo', 'tail-line'] } },
        { onprogress: (p) => beats.push(p) },
      );
      assert.ok(
        beats.some((b) => /latest: tail-line/.test(b.message ?? '')),
        JSON.stringify(beats),
      );
    } finally {
      await c.close();
    }
  });

  it('a call shorter than the quiet start answers with its result alone: no state is sent or flushed', async () => {
    // A notification just before the result is dropped by SDK clients that read both at once (progress.ts).
    const api = createTestEngine().api;
    const c = await connect(api, { progressIntervalMs: 60_000, progressQuietMs: 60_000 });
    try {
      const r = await c.client.callTool(
        { name: 'exec_run', arguments: { argv: ['echo', 'tail-line'] } },
        { onprogress: () => undefined },
      );
      assert.match(JSON.stringify(r), /tail-line/);
      await c.client.ping();
      assert.equal(c.progressOnWire(), 0);
    } finally {
      await c.close();
    }
  });

  it('cancelling the request aborts the signal handed to the API', async () => {
    const b = blockingExec(createTestEngine().api);
    const c = await connect(b.api);
    try {
      const ac = new AbortController();
      const call = c.client.callTool(
        { name: 'exec_run', arguments: { command: 'sleep 600' } },
        { signal: ac.signal },
      );
      await until(b.started, 'the exec to start');
      ac.abort('user cancelled');
      await assert.rejects(call);
      await until(() => b.seen[0]?.signal?.aborted === true, 'the abort to reach the API');
    } finally {
      await c.close();
    }
  });

  it('closing the connection aborts calls in flight', async () => {
    const b = blockingExec(createTestEngine().api);
    const c = await connect(b.api);
    const call = c.client
      .callTool({ name: 'exec_run', arguments: { command: 'sleep 600' } })
      .catch(() => 'closed');
    await until(b.started, 'the exec to start');
    await c.close();
    assert.equal(await call, 'closed');
    await until(() => b.seen[0]?.signal?.aborted === true, 'the close to abort the call');
  });
});

describe('tool errors', () => {
  it('name tools the model can call, not CLI commands', async () => {
    const c = await connect(createTestEngine().api);
    try {
      const r = await c.call('sandbox_get', { sandbox: 'nope' });
      assert.equal(r.isError, true);
      const msg = texts(r)[0] ?? '';
      assert.match(msg, /no sandbox 'nope'\. List sandboxes with sandbox_list/);
      assert.doesNotMatch(msg, /forkbox ls/);
    } finally {
      await c.close();
    }
  });
});
