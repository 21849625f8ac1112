/**
 * The MCP server end to end in-process: the official SDK v2 Client talks to createForkboxMcpServer
 * through the SDK's in-memory transport pair, over the real engine (runc templates, forked sandboxes).
 * Every canonical tool is called, with its error cases, progress streaming and cancellation.
 */

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { LIMITS, PORTS } from '../../src/domain/limits.ts';
import { DEFAULT_LABEL } from '../../src/protocol/mcp/default-sandbox.ts';
import { createDefaultSandbox, createForkboxMcpServer } from '../../src/protocol/mcp/server.ts';
import { CANONICAL_TOOLS } from '../../src/protocol/mcp/tools/index.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

const skip = nativeUnavailable();

type SC = Record<string, unknown>;
const text = (r: CallToolResult): string => (r.content[0]?.type === 'text' ? r.content[0].text : '');

describe('mcp over the real engine (in-memory transport)', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let client: Client;
  let closeServer: () => Promise<void>;
  const defaults = createDefaultSandbox();
  const called = new Set<string>();

  async function call(name: string, args: SC = {}, opts: Parameters<Client['callTool']>[1] = {}) {
    called.add(name);
    return (await client.callTool({ name, arguments: args }, opts)) as CallToolResult;
  }
  /**
   * Call and expect success; return the structured content with its bulk fields (stdout, stderr, file
   * content), which travel once each, as their own text blocks (protocol/mcp/kit/tool-result.ts).
   */
  async function ok<T = SC>(name: string, args: SC = {}): Promise<T> {
    const r = await call(name, args);
    assert.notEqual(r.isError, true, `${name} failed: ${text(r)}`);
    const copy = JSON.parse(text(r)) as SC;
    const out: SC = { ...(r.structuredContent as SC) };
    for (const [i, b] of r.content.entries()) {
      const field = b._meta?.['forkbox/field'];
      if (b.type !== 'text' || typeof field !== 'string') continue;
      assert.equal(
        copy[field],
        `(content block ${i}, ${Buffer.byteLength(b.text)} bytes)`,
        `${name}: pointer`,
      );
      out[field] = b.text;
    }
    for (const [k, v] of Object.entries(copy)) if (v === '' && !(k in out)) out[k] = '';
    assert.deepEqual(
      Object.fromEntries(
        Object.entries(copy).filter(([k]) => !(k in out) || out[k] === copy[k] || typeof out[k] !== 'string'),
      ),
      Object.fromEntries(
        Object.entries(out).filter(([k]) => !(k in copy) || out[k] === copy[k] || typeof out[k] !== 'string'),
      ),
      `${name}: the text copy equals structuredContent, bulk fields pointing at their blocks`,
    );
    return out as T;
  }
  async function fails(name: string, args: SC, re: RegExp): Promise<void> {
    const r = await call(name, args);
    assert.equal(r.isError, true, `${name} should fail: ${text(r)}`);
    assert.match(text(r), re);
  }

  before(async () => {
    fx = await openNative();
    const server = createForkboxMcpServer({ api: fx.opened.api, defaults, version: 'test' });
    const [ct, st] = InMemoryTransport.createLinkedPair();
    await server.connect(st);
    client = new Client({ name: 'forkbox-test', version: '1' });
    await client.connect(ct);
    closeServer = () => server.close();
  });
  after(async () => {
    await client?.close();
    await closeServer?.();
    await fx?.close();
  });

  it('lists every tool with title, annotations, input and output schemas', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name),
      CANONICAL_TOOLS.map((t) => t.name),
    );
    for (const t of tools) {
      assert.ok(t.title && t.description, t.name);
      assert.equal(t.inputSchema.type, 'object', t.name);
      assert.equal(t.outputSchema?.type, 'object', t.name);
      // Hints are advertised where they differ from the spec's defaults (tool-kit.ts advertisedHints).
      assert.equal(t.annotations?.openWorldHint, false, t.name);
      for (const h of ['readOnlyHint', 'destructiveHint', 'idempotentHint'] as const) {
        const v = t.annotations?.[h];
        assert.ok(v === undefined || typeof v === 'boolean', `${t.name} ${h}`);
      }
    }
  });

  it('system_status and image_list describe the engine', async () => {
    const s = await ok<{ runtime: string; capabilities: string[] }>('system_status');
    assert.equal(s.runtime, 'native');
    assert.ok(s.capabilities.includes('pause'), JSON.stringify(s.capabilities));
    const i = await ok<{ images: { name: string }[] }>('image_list');
    assert.ok(i.images.some((x) => x.name === 'debian'));
  });

  it('creates the default sandbox lazily, reuses it, and re-creates it after a kill', async () => {
    assert.equal(defaults.get(), undefined);
    const r = await ok<{ stdout: string; exit_code: number }>('exec_run', {
      argv: ['python3', '-c', 'print(6*7)'],
    });
    assert.equal(r.stdout, '42\n');
    assert.equal(r.exit_code, 0);
    const first = defaults.get();
    assert.ok(first);
    await ok('exec_run', { command: 'echo again > /tmp/marker' });
    assert.equal(defaults.get(), first, 'the second call reuses the default sandbox');
    const listed = await ok<{ sandboxes: { id: string; labels: Record<string, string> }[] }>('sandbox_list');
    assert.equal(listed.sandboxes.find((s) => s.id === first)?.labels[DEFAULT_LABEL], 'true');

    const killed = await ok<{ id: string; state: string }>('sandbox_kill');
    assert.equal(killed.id, first);
    assert.equal(killed.state, 'killed');
    const again = await ok<{ exit_code: number }>('exec_run', { command: 'test ! -e /tmp/marker' });
    assert.equal(again.exit_code, 0, 'a fresh default sandbox, without the old files');
    assert.notEqual(defaults.get(), first);
  });

  it('manages a named sandbox: create, get with usage, extend, pause, resume, kill', async () => {
    const sb = await ok<{ id: string; name: string; memory_mb: number; labels: SC }>('sandbox_create', {
      name: 'mcp-named',
      memory_mb: 256,
      pids: 128,
      cpus: 0.5,
      ttl_s: 600,
      env: { GREETING: 'hello' },
      labels: { team: 'a' },
    });
    assert.equal(sb.name, 'mcp-named');
    assert.equal(sb.memory_mb, 256);
    const env = await ok<{ stdout: string }>('exec_run', { sandbox: 'mcp-named', command: 'echo $GREETING' });
    assert.equal(env.stdout, 'hello\n');
    const got = await ok<{ state: string; usage?: { pids: number; memory_bytes: number } }>('sandbox_get', {
      sandbox: sb.id,
    });
    assert.equal(got.state, 'running');
    assert.ok(got.usage && got.usage.pids >= 1 && got.usage.memory_bytes > 0, JSON.stringify(got.usage));
    // The new expiry is an hour from the moment of the call: bracketed by the clock before and after it.
    const before = Date.now();
    const ext = await ok<{ expires_at: string }>('sandbox_extend', { sandbox: 'mcp-named', ttl_s: 3600 });
    const after = Date.now();
    assert.ok(Date.parse(ext.expires_at) >= before + 3600_000, ext.expires_at);
    assert.ok(Date.parse(ext.expires_at) <= after + 3600_000, ext.expires_at);
    assert.equal((await ok<{ state: string }>('sandbox_pause', { sandbox: 'mcp-named' })).state, 'paused');
    await fails(
      'exec_run',
      { sandbox: 'mcp-named', command: 'true' },
      /paused.*sandbox_resume|paused.*resume/i,
    );
    assert.equal((await ok<{ state: string }>('sandbox_resume', { sandbox: 'mcp-named' })).state, 'running');
    const filtered = await ok<{ sandboxes: { name: string }[] }>('sandbox_list', { labels: { team: 'a' } });
    assert.deepEqual(
      filtered.sandboxes.map((s) => s.name),
      ['mcp-named'],
    );
    assert.equal((await ok<{ state: string }>('sandbox_kill', { sandbox: 'mcp-named' })).state, 'killed');
    const all = await ok<{ sandboxes: { name: string; state: string }[] }>('sandbox_list', { all: true });
    assert.ok(all.sandboxes.some((s) => s.name === 'mcp-named' && s.state === 'killed'));
  });

  it('sandbox_fork branches the REPL state into children; kill with cascade removes the subtree', async () => {
    const src = await ok<{ id: string }>('sandbox_create', { name: 'mcp-fork-src', memory_mb: 256 });
    await ok('code_run', { sandbox: src.id, code: 'import random\nstate = {"step": 7}' });
    const r = await ok<{
      pause_ms: number;
      carried: { python_state: boolean };
      not_carried: string[];
      children: { ok: boolean; id?: string }[];
    }>('sandbox_fork', { sandbox: src.id, n: 2 });
    assert.equal(r.children.length, 2);
    assert.equal(r.carried.python_state, true);
    assert.ok(r.not_carried.length > 0);
    for (const c of r.children) {
      assert.equal(c.ok, true);
      assert.equal(
        (await ok<{ parent_id: string | null }>('sandbox_get', { sandbox: c.id })).parent_id,
        src.id,
      );
      const v = await ok<{ value: string | null }>('code_run', {
        sandbox: c.id,
        code: 'state["step"]',
      });
      assert.equal(v.value, '7');
    }
    const got = await ok<{ children: string[] }>('sandbox_get', { sandbox: src.id });
    assert.deepEqual([...got.children].sort(), r.children.map((c) => c.id).sort());
    // The bound of LIMITS.forkChildren, named by the schema's message on either side.
    const { min, max } = LIMITS.forkChildren;
    await fails(
      'sandbox_fork',
      { sandbox: src.id, n: min - 1 },
      new RegExp(
        `^invalid arguments for sandbox_fork: \`n\`: Too small: expected number to be >=${min}\\. .*\\[code: invalid_argument\\]$`,
      ),
    );
    await fails(
      'sandbox_fork',
      { sandbox: src.id, n: max + 1 },
      new RegExp(
        `^invalid arguments for sandbox_fork: \`n\`: Too big: expected number to be <=${max}\\. .*\\[code: invalid_argument\\]$`,
      ),
    );
    // Diff two forks after each changed a different file, then keep one of them with a merge.
    const [c1, c2] = r.children.map((c) => c.id ?? '') as [string, string];
    await ok('file_write', { sandbox: c1, path: '/tmp/one.txt', content: 'one\n' });
    await ok('file_write', { sandbox: c2, path: '/tmp/two.txt', content: 'two\n' });
    const d = await ok<{ added: { path: string }[]; removed: { path: string }[] }>('sandbox_diff', {
      a: c1,
      b: c2,
    });
    assert.deepEqual(
      d.added.map((e) => e.path),
      ['/tmp/two.txt'],
    );
    assert.deepEqual(
      d.removed.map((e) => e.path),
      ['/tmp/one.txt'],
    );
    const m = await ok<{ sandbox: { id: string }; winner: string }>('sandbox_merge', {
      parent: src.id,
      winner: c1,
    });
    assert.equal(m.sandbox.id, src.id);
    const kept = await ok<{ content: string }>('file_read', { sandbox: src.id, path: '/tmp/one.txt' });
    assert.equal(kept.content, 'one\n');
    await fails('sandbox_merge', { parent: c2, winner: src.id }, /not an ancestor/);
    await ok('sandbox_kill', { sandbox: src.id, cascade: true });
    for (const c of r.children) {
      assert.equal((await ok<{ state: string }>('sandbox_get', { sandbox: c.id })).state, 'killed');
    }
  });

  it('snapshots: create, list, get, restore with Python state, delete (refused, then cascade)', async () => {
    const src = await ok<{ id: string }>('sandbox_create', { name: 'mcp-snap-src', memory_mb: 256 });
    await ok('code_run', { sandbox: src.id, code: 'answer = 41 + 1' });
    const snap = await ok<{ id: string; python_state: boolean }>('snapshot_create', {
      sandbox: src.id,
      name: 'mcp-snap',
    });
    assert.equal(snap.python_state, true);
    const listed = await ok<{ snapshots: { name: string }[] }>('snapshot_list', {});
    assert.ok(listed.snapshots.some((s) => s.name === 'mcp-snap'));
    const r = await ok<{
      carried: { python_state: boolean };
      sandboxes: { ok: boolean; id?: string }[];
    }>('snapshot_restore', { snapshot: 'mcp-snap' });
    assert.equal(r.carried.python_state, true);
    const restored = r.sandboxes[0]?.id;
    assert.equal(
      (await ok<{ value: string | null }>('code_run', { sandbox: restored, code: 'answer' })).value,
      '42',
    );
    const got = await ok<{ dependents: string[] }>('snapshot_get', { snapshot: 'mcp-snap' });
    assert.deepEqual(got.dependents, [restored]);
    await fails('snapshot_delete', { snapshot: 'mcp-snap' }, /used by 1 live sandbox/);
    const del = await ok<{ killed: string[] }>('snapshot_delete', { snapshot: 'mcp-snap', cascade: true });
    assert.deepEqual(del.killed, [restored]);
    await fails('snapshot_get', { snapshot: 'mcp-snap' }, /no snapshot/);
    await ok('sandbox_kill', { sandbox: src.id });
  });

  it('reports an unknown sandbox and bad arguments as tool errors', async () => {
    await fails(
      'exec_run',
      { sandbox: 'no-such-sandbox', command: 'true' },
      /no sandbox 'no-such-sandbox'.*not_found/,
    );
    await fails('sandbox_create', { memory_mb: 1 }, /invalid arguments for sandbox_create: `memory_mb`/);
    await fails('file_read', {}, /invalid arguments for file_read: `path`/);
    await fails('exec_run', { command: 'true', argv: ['true'] }, /exactly one of `command`/);
  });

  it('exec_run: stdin, exit codes, timeouts and truncation', async () => {
    const up = await ok<{ stdout: string }>('exec_run', { argv: ['tr', 'a-z', 'A-Z'], stdin: 'shout\n' });
    assert.equal(up.stdout, 'SHOUT\n');
    const bad = await ok<{ exit_code: number; stderr: string }>('exec_run', {
      command: 'echo no >&2; exit 4',
    });
    assert.equal(bad.exit_code, 4);
    assert.equal(bad.stderr, 'no\n');
    const slow = await ok<{ timed_out: boolean }>('exec_run', { command: 'sleep 5', timeout_s: 0.5 });
    assert.equal(slow.timed_out, true);
    const big = await ok<{
      truncated: boolean;
      stdout: string;
      streams: { stdout: { total_bytes: number; omitted_bytes: number; file: string | null } };
    }>('exec_run', {
      command: 'head -c 100000 /dev/zero | tr "\\0" x; echo END',
      max_output_bytes: 1000,
    });
    assert.equal(big.truncated, true);
    // Per stream: a head of 750 bytes, a marker naming the file with the whole stream, a tail of 250.
    assert.ok(big.stdout.startsWith(`${'x'.repeat(750)}\n[forkbox: 99004 bytes of stdout omitted here;`));
    assert.ok(big.stdout.endsWith('xxxxEND\n'));
    assert.equal(big.streams.stdout.total_bytes, 100_004);
    assert.equal(big.streams.stdout.omitted_bytes, 99_004);
    assert.match(big.streams.stdout.file ?? '', /^\/tmp\/\.forkbox-output\/ex-[0-9a-f]+\.stdout$/);
  });

  it('exec_run streams output as progress notifications before the result', async () => {
    // Each line is printed only after the client got the previous one as a progress notification (it
    // then writes the file the command waits for): the output cannot arrive in one burst at the end.
    const seen: { progress: number; message: string | undefined }[] = [];
    const acks: Promise<unknown>[] = [];
    const r = await call(
      'exec_run',
      {
        command:
          'for i in 1 2 3 4 5 6; do echo line $i; while [ ! -e /tmp/ack-$i ]; do sleep 0.01; done; done',
      },
      {
        onprogress: (p) => {
          seen.push({ progress: p.progress, message: p.message });
          for (const m of (p.message ?? '').matchAll(/line (\d)/g))
            acks.push(call('file_write', { path: `/tmp/ack-${m[1]}`, content: '' }));
        },
      },
    );
    await Promise.all(acks);
    const countAtResult = seen.length;
    assert.notEqual(r.isError, true, text(r));
    // At most one a second (progress.ts), each with the output's latest tail: one at least per line.
    assert.ok(countAtResult >= 6, `got ${countAtResult} progress notifications`);
    const progress = seen.map((s) => s.progress);
    assert.deepEqual(
      progress,
      [...progress].sort((a, b) => a - b),
    );
    assert.equal(new Set(progress).size, progress.length, 'progress strictly increases');
    assert.match(seen.map((s) => s.message).join(''), /line 1\n[\s\S]*line 6\n/);
  });

  it('cancelling exec_run kills the command', async () => {
    const ac = new AbortController();
    let progressed = false;
    const p = call(
      'exec_run',
      { command: 'echo started; sleep 3001; echo done > /tmp/cancel-proof' },
      {
        signal: ac.signal,
        onprogress: () => {
          progressed = true;
          ac.abort();
        },
      },
    );
    await assert.rejects(p);
    assert.ok(progressed, 'the command had started');
    // The exec ends as cancelled, and its 50-minute sleep is gone: nothing is left to write the proof.
    await waitFor(
      async () => {
        const execs = await ok<{ execs: { command: string[]; state: string }[] }>('exec_list');
        return execs.execs.find((e) => e.command.join(' ').includes('cancel-proof'))?.state === 'cancelled';
      },
      { what: 'the cancelled exec_run is listed as cancelled' },
    );
    const ps = await ok<{ stdout: string }>('exec_run', { command: 'ps -eo args' });
    assert.doesNotMatch(ps.stdout, /sleep 3001/);
    await fails('file_stat', { path: '/tmp/cancel-proof' }, /not_found/);
  });

  it('background execs: start, write stdin, poll, cancel, list', async () => {
    const cat = await ok<{ exec_id: string; state: string }>('exec_start', { argv: ['cat'], stdin: true });
    assert.equal(cat.state, 'running');
    const w = await ok<{ written_bytes: number }>('exec_write_stdin', {
      exec_id: cat.exec_id,
      data: 'echoed\n',
      eof: true,
    });
    assert.equal(w.written_bytes, 7);
    let out = '';
    let seq = -1;
    for (let i = 0; i < 20; i++) {
      const r = await ok<{
        stdout: string;
        next_seq: number;
        done: boolean;
        exec: { exit_code: number };
      }>('exec_poll', { exec_id: cat.exec_id, after_seq: seq, wait_ms: 2000 });
      out += r.stdout;
      seq = r.next_seq;
      if (r.done) {
        assert.equal(r.exec.exit_code, 0);
        break;
      }
    }
    assert.equal(out, 'echoed\n');

    const sleeper = await ok<{ exec_id: string }>('exec_start', { command: 'sleep 100' });
    const c = await ok<{ state: string }>('exec_cancel', { exec_id: sleeper.exec_id });
    assert.equal(c.state, 'cancelled');
    const list = await ok<{ execs: { exec_id: string }[] }>('exec_list');
    assert.ok(list.execs.some((e) => e.exec_id === sleeper.exec_id));

    // A retried exec_start with the same idempotency key is the same exec: the command runs once.
    const args = { command: 'echo run >> /tmp/idem-runs', idempotency_key: 'retry-1' };
    const first = await ok<{ exec_id: string }>('exec_start', args);
    const again = await ok<{ exec_id: string }>('exec_start', args);
    assert.equal(again.exec_id, first.exec_id);
    await ok('exec_poll', { exec_id: first.exec_id, wait_ms: 5000 });
    const runs = await ok<{ stdout: string }>('exec_run', { command: 'cat /tmp/idem-runs' });
    assert.equal(runs.stdout, 'run\n', 'the command ran once');
  });

  it('code_run keeps Python state and returns trailing values; code_reset clears it', async () => {
    await ok('code_run', { code: 'x = 41' });
    const v = await ok<{ ok: boolean; value: string }>('code_run', { code: 'x + 1' });
    assert.equal(v.value, '42');
    const err = await ok<{ ok: boolean; error: { type: string } }>('code_run', { code: '1/0' });
    assert.equal(err.ok, false);
    assert.equal(err.error.type, 'ZeroDivisionError');
    const sh = await ok<{ stdout: string }>('code_run', { language: 'bash', code: 'echo $((6*7))' });
    assert.equal(sh.stdout, '42\n');
    await ok('code_reset');
    const gone = await ok<{ ok: boolean; error: { type: string } }>('code_run', { code: 'x' });
    assert.equal(gone.error.type, 'NameError');
  });

  it('cancelling code_run interrupts the Python code and keeps the REPL state', async () => {
    await ok('code_run', { code: 'kept = "not lost"' });
    const ac = new AbortController();
    let progressed = false;
    const p = call(
      'code_run',
      { code: "print('looping', flush=True)\nwhile True:\n    pass" },
      {
        signal: ac.signal,
        onprogress: () => {
          progressed = true;
          ac.abort();
        },
      },
    );
    await assert.rejects(p);
    assert.ok(progressed, 'the loop had started (its output came as progress)');
    // The next call waits for the cancelled one in the REPL's queue: it answers only once the loop stopped.
    const v = await ok<{ value: string; ok: boolean }>('code_run', { code: 'kept' });
    assert.equal(v.value, "'not lost'");
  });

  it('files: write, read, edit, list, stat, move, delete, with etags', async () => {
    const w = await ok<{ etag: string; size: number }>('file_write', {
      path: '/work/a/b.txt',
      content: 'alpha = 1\nbeta = 1\n',
      create_dirs: true,
    });
    assert.equal(w.size, 19);
    const r = await ok<{ content: string; etag: string; size: number }>('file_read', {
      path: '/work/a/b.txt',
    });
    assert.equal(r.content, 'alpha = 1\nbeta = 1\n');
    assert.equal(r.etag, w.etag);
    const part = await ok<{ content: string; truncated: boolean; etag: string }>('file_read', {
      path: '/work/a/b.txt',
      offset: 2,
      length: 3,
    });
    assert.equal(part.content, 'pha');
    assert.equal(part.truncated, true);
    assert.equal(part.etag, w.etag, 'a partial read still carries the whole file etag');
    const b64 = await ok<{ content: string }>('file_read', {
      path: '/work/a/b.txt',
      encoding: 'base64',
      length: 5,
    });
    assert.equal(Buffer.from(b64.content, 'base64').toString(), 'alpha');

    await fails('file_edit', { path: '/work/a/b.txt', old_string: 'gamma', new_string: 'x' }, /0 matches/);
    await fails(
      'file_edit',
      { path: '/work/a/b.txt', old_string: ' = 1', new_string: ' = 2' },
      /occurs 2 times/,
    );
    const e = await ok<{ etag: string }>('file_edit', {
      path: '/work/a/b.txt',
      old_string: 'beta = 1',
      new_string: 'beta = 2',
      if_match: w.etag,
    });
    assert.notEqual(e.etag, w.etag);
    await fails(
      'file_write',
      { path: '/work/a/b.txt', content: 'clobber', if_match: w.etag },
      /changed since you read it.*file_read/,
    );
    const ok2 = await ok<{ etag: string }>('file_write', {
      path: '/work/a/b.txt',
      content: '#!/bin/sh\necho hi\n',
      if_match: e.etag,
      mode: '755',
    });
    const st = await ok<{ type: string; mode: string; etag: string }>('file_stat', { path: '/work/a/b.txt' });
    assert.deepEqual([st.type, st.mode, st.etag], ['file', '755', ok2.etag]);
    const run = await ok<{ stdout: string }>('exec_run', { argv: ['/work/a/b.txt'] });
    assert.equal(run.stdout, 'hi\n');

    await ok('file_write', {
      path: '/work/a/bin.dat',
      content: Buffer.from([0, 1, 2, 255]).toString('base64'),
      encoding: 'base64',
    });
    const bin = await ok<{ content: string; size: number }>('file_read', {
      path: '/work/a/bin.dat',
      encoding: 'base64',
    });
    assert.deepEqual([...Buffer.from(bin.content, 'base64')], [0, 1, 2, 255]);

    const ls = await ok<{ entries: { path: string; type: string }[] }>('file_list', { path: '/work/a' });
    assert.deepEqual(ls.entries.map((x) => x.path.split('/').pop()).sort(), ['b.txt', 'bin.dat']);
    await ok('file_move', { from: '/work/a/b.txt', to: '/work/c.txt' });
    await fails('file_stat', { path: '/work/a/b.txt' }, /not_found/);
    const deep = await ok<{ entries: { path: string }[] }>('file_list', { path: '/work', recursive: true });
    assert.ok(deep.entries.some((x) => x.path === '/work/c.txt'));
    await ok('file_delete', { path: '/work/c.txt' });
    await ok('file_delete', { path: '/work/a', recursive: true });
    const empty = await ok<{ entries: unknown[] }>('file_list', { path: '/work' });
    assert.deepEqual(empty.entries, []);
  });

  it('wait_for_text waits for a marker written later, and times out cleanly', async () => {
    // The marker is appended only once a reader has closed the log (inotify IN_CLOSE_NOWRITE): the only
    // reader is the tool, so `found` means it read again after a read that did not find it.
    const appendAfterRead = [
      'import ctypes, os',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'fd = libc.inotify_init()',
      "open('/tmp/app.log', 'w').write('starting\\n')",
      "assert libc.inotify_add_watch(fd, b'/tmp/app.log', 0x10) >= 0",
      "open('/tmp/ready-to-watch', 'w').close()",
      'os.read(fd, 4096)',
      "open('/tmp/app.log', 'a').write('server ready\\n')",
    ].join('\n');
    await ok('exec_start', { argv: ['python3', '-c', appendAfterRead] });
    await waitFor(
      async () => {
        const r = await call('file_stat', { path: '/tmp/ready-to-watch' });
        return r.isError !== true;
      },
      { what: 'the log is watched' },
    );
    const w = await ok<{ found: boolean; size: number | null }>('wait_for_text', {
      path: '/tmp/app.log',
      marker: 'ready',
      timeout_s: 60,
    });
    assert.equal(w.found, true);
    assert.equal(w.size, 'starting\nserver ready\n'.length);
    const t = await ok<{ found: boolean }>('wait_for_text', {
      path: '/tmp/app.log',
      marker: 'never',
      timeout_s: 0.5,
    });
    assert.equal(t.found, false);
  });

  it('templates: define, list, create from one (warm REPL), delete refused while used, then deleted', async () => {
    const def = await ok<{ name: string; prewarm: string[] }>('template_define', {
      name: 'mcp-warm',
      prewarm: ['decimal', 'sqlite3'],
    });
    assert.deepEqual(def.prewarm, ['decimal', 'sqlite3']);
    const listed = await ok<{ templates: { name: string; builtin: boolean }[] }>('template_list');
    assert.deepEqual(
      listed.templates.map((t) => [t.name, t.builtin]),
      [
        ['default', true],
        ['mcp-warm', false],
      ],
    );
    const sb = await ok<{ id: string }>('sandbox_create', { template: 'mcp-warm', memory_mb: 256 });
    const r = await ok<{ value: string | null }>('code_run', {
      sandbox: sb.id,
      code: "import sys; 'sqlite3' in sys.modules",
    });
    assert.equal(r.value, 'True');
    await fails('template_delete', { name: 'mcp-warm' }, new RegExp(`used by 1 live sandbox.*${sb.id}`));
    await ok('sandbox_kill', { sandbox: sb.id });
    assert.deepEqual(await ok('template_delete', { name: 'mcp-warm' }), { deleted: 'mcp-warm' });
    await fails('sandbox_create', { template: 'mcp-warm' }, /no template 'mcp-warm'/);
  });

  it('ports: create with ports, port_expose, port_list; a server answers on the host port', async () => {
    const sb = await ok<{ id: string }>('sandbox_create', { ports: [8000], memory_mb: 256 });
    const first = await ok<{ ports: { port: number; host_port: number }[] }>('port_list', { sandbox: sb.id });
    assert.deepEqual(
      first.ports.map((p) => p.port),
      [8000],
    );
    const p = await ok<{ port: number; host_port: number }>('port_expose', { sandbox: sb.id, port: 8001 });
    assert.equal(p.port, 8001);
    await ok('exec_run', {
      sandbox: sb.id,
      command:
        'cd /tmp && echo hi > hi.txt && python3 -m http.server 8001 --bind 127.0.0.1 >/dev/null 2>&1 &',
    });
    const body = await waitFor(
      async () => {
        const r = await fetch(`http://${PORTS.publishHost}:${p.host_port}/hi.txt`, {
          signal: AbortSignal.timeout(3000),
        }).catch(() => null);
        return r?.status === 200 ? r.text() : undefined;
      },
      { what: 'the published server answers', timeoutMs: 20_000 },
    );
    assert.equal(body, 'hi\n');
    await fails('port_expose', { sandbox: sb.id, port: 0 }, /port/);
    await ok('sandbox_kill', { sandbox: sb.id });
  });

  it('called every canonical tool', () => {
    const missing = CANONICAL_TOOLS.map((t) => t.name).filter((n) => !called.has(n));
    assert.deepEqual(missing, []);
  });
});
