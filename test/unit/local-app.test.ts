import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ForkboxError } from '../../src/domain/errors.ts';
import { fromErrorBody, toHttpError } from '../../src/protocol/rest/errors.ts';
import { createLocalApp } from '../../src/protocol/rest/local-app.ts';
import { addFailurePrograms, createTestEngine } from '../helpers/test-engine.ts';

function setup() {
  const t = createTestEngine({
    hostGc: async () => ({ removedMounts: ['/gone'], removedCgroups: [], removedDirs: [] }),
    diskUsage: async () => ({ stateDir: '/s', images: [], sandboxes: [], totalBytes: 10 }),
  });
  addFailurePrograms(t.runtime);
  const api = t.api;
  const app = createLocalApp(api, { version: '9.9.9' });
  const json = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    app.request(path, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
  return { api, app, json };
}

describe('local app', () => {
  it('serves /healthz and /v1/system', async () => {
    const { app } = setup();
    const h = await app.request('/healthz');
    assert.equal(h.status, 200);
    assert.deepEqual(await h.json(), { ok: true, version: '9.9.9' });
    const s = await app.request('/v1/system');
    assert.equal(((await s.json()) as { runtime: string }).runtime, 'fake');
  });

  it('creates, lists, gets (with usage), pauses, extends and kills sandboxes', async () => {
    const { json, api } = setup();
    const c = await json('POST', '/v1/sandboxes', {
      name: 'box',
      memoryMb: 512,
      labels: { team: 'a', x: 'y=z' },
    });
    assert.equal(c.status, 201);
    const sb = (await c.json()) as { id: string; limits: { memoryBytes: number } };
    assert.equal(sb.limits.memoryBytes, 512 * 1024 * 1024);
    assert.deepEqual(api.calls.at(-1), {
      method: 'createSandbox',
      args: [{ name: 'box', memoryMb: 512, labels: { team: 'a', x: 'y=z' } }],
    });

    await json('POST', '/v1/sandboxes', { name: 'other', labels: { team: 'a' } });
    const l = await json('GET', '/v1/sandboxes?all=1&label=team=a&label=x=y=z');
    assert.deepEqual(
      ((await l.json()) as { name: string }[]).map((x) => x.name),
      ['box'],
    );
    assert.deepEqual(api.calls.at(-1)?.args[0], { all: true, labels: { team: 'a', x: 'y=z' } });
    const l2 = await json('GET', '/v1/sandboxes?label=team=a');
    assert.deepEqual(((await l2.json()) as { name: string }[]).map((x) => x.name).sort(), ['box', 'other']);

    const g = (await (await json('GET', '/v1/sandboxes/box?usage=1')).json()) as { usage?: { pids: number } };
    assert.deepEqual(g.usage, (await api.getSandbox('box', { usage: true })).usage);
    assert.ok((g.usage?.pids ?? 0) >= 1);
    const g2 = (await (await json('GET', `/v1/sandboxes/${sb.id}`)).json()) as { usage?: unknown };
    assert.equal(g2.usage, undefined);

    assert.equal(
      ((await (await json('POST', '/v1/sandboxes/box/pause')).json()) as { state: string }).state,
      'paused',
    );
    const again = await json('POST', '/v1/sandboxes/box/pause');
    assert.equal(again.status, 409);
    const before = Date.now();
    const e = (await (await json('POST', '/v1/sandboxes/box/extend', { ttlSeconds: 60 })).json()) as {
      expiresAt: string;
    };
    assert.ok(Date.parse(e.expiresAt) >= before + 60_000 && Date.parse(e.expiresAt) <= Date.now() + 60_000);
    assert.equal(
      ((await (await json('DELETE', '/v1/sandboxes/box')).json()) as { state: string }).state,
      'killed',
    );
  });

  it('rejects bad input with 400 and a message naming the field', async () => {
    const { json } = setup();
    const r = await json('POST', '/v1/sandboxes', { memoryMb: -5, bogus: 1 });
    assert.equal(r.status, 400);
    const body = (await r.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'invalid_argument');
    assert.match(body.error.message, /memoryMb/);
    assert.match(body.error.message, /bogus/);

    const bad = await json('POST', '/v1/sandboxes', '{not json');
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { error: { message: string } }).error.message, /not valid JSON/);

    const both = await json('POST', '/v1/sandboxes/x/exec', { argv: ['ls'], cmd: 'ls' });
    assert.equal(both.status, 400);
    assert.match(
      ((await both.json()) as { error: { message: string } }).error.message,
      /exactly one of argv/,
    );

    const q = await json('GET', '/v1/sandboxes/x/execs/e1?wait_ms=999999');
    assert.equal(q.status, 400);
    assert.match(((await q.json()) as { error: { message: string } }).error.message, /wait_ms/);

    const nopath = await json('GET', '/v1/sandboxes/x/files/stat');
    assert.equal(nopath.status, 400);
    assert.match(((await nopath.json()) as { error: { message: string } }).error.message, /path/);
  });

  it('maps engine errors to their catalog status', async () => {
    const { json } = setup();
    const nf = await json('GET', '/v1/sandboxes/nope');
    assert.equal(nf.status, 404);
    const body = (await nf.json()) as { error: { code: string; message: string; details: unknown } };
    assert.equal(body.error.code, 'not_found');
    assert.match(body.error.message, /forkbox ls/);
    assert.deepEqual(body.error.details, { sandbox: 'nope' });

    const route = await json('GET', '/v1/nothing-here');
    assert.equal(route.status, 404);
    assert.equal(((await route.json()) as { error: { code: string } }).error.code, 'not_found');
  });

  it('refuses oversized JSON bodies with 413', async () => {
    const { json } = setup();
    const big = { name: 'x', env: { A: 'y'.repeat(2 * 1024 * 1024) } };
    const r = await json('POST', '/v1/sandboxes', big);
    assert.equal(r.status, 413);
    assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'too_large');
  });

  it('runs exec as one JSON result, or streams NDJSON lines when asked', async () => {
    const { json } = setup();
    await json('POST', '/v1/sandboxes', { name: 'b' });
    const plain = await json('POST', '/v1/sandboxes/b/exec', {
      argv: ['cat'],
      stdin: Buffer.from('in').toString('base64'),
    });
    assert.equal(plain.status, 200);
    const o = (await plain.json()) as { stdout: string; stderr: string; exitCode: number };
    assert.equal(o.stdout, 'in');
    assert.equal(o.stderr, '');

    const streamed = await json(
      'POST',
      '/v1/sandboxes/b/exec',
      { cmd: 'echo hi; echo err >&2' },
      { accept: 'application/x-ndjson' },
    );
    assert.equal(streamed.status, 200);
    assert.match(streamed.headers.get('content-type') ?? '', /application\/x-ndjson/);
    const lines = (await streamed.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(lines.length, 4);
    // First the exec's id (a client that drops the connection cancels it by this id), then its output.
    assert.equal(lines[0]?.type, 'started');
    assert.match(String(lines[0]?.execId), /^ex-/);
    assert.deepEqual(lines[1], {
      type: 'output',
      seq: 0,
      stream: 'stdout',
      data: Buffer.from('hi\n').toString('base64'),
    });
    assert.equal(lines[2]?.stream, 'stderr');
    assert.equal(lines[3]?.type, 'result');
    assert.equal((lines[3]?.result as { exitCode: number } | undefined)?.exitCode, 0);

    // An error after streaming began arrives as a final error line.
    const died = await json(
      'POST',
      '/v1/sandboxes/b/exec',
      { argv: ['die'] },
      { accept: 'application/x-ndjson' },
    );
    const dl = (await died.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; error?: { code: string } });
    assert.deepEqual(
      dl.map((l) => l.type),
      ['started', 'output', 'error'],
    );
    assert.equal(dl[2]?.error?.code, 'sandbox_gone');
  });

  it('serves background execs: start, poll, stdin (raw), cancel, list', async () => {
    const { json, app, api } = setup();
    await json('POST', '/v1/sandboxes', { name: 'b' });
    const st = await json('POST', '/v1/sandboxes/b/execs', { cmd: 'cat', stdin: true });
    assert.equal(st.status, 201);
    const rec = (await st.json()) as { id: string };
    const p = (await (await json('GET', `/v1/sandboxes/b/execs/${rec.id}?after_seq=4&wait_ms=0`)).json()) as {
      nextSeq: number;
      done: boolean;
    };
    assert.equal(p.nextSeq, 4, 'no chunk after seq 4 yet');
    assert.equal(p.done, false);
    assert.deepEqual(api.calls.at(-1)?.args[2], { afterSeq: 4, waitMs: 0 });
    const w = await app.request(`/v1/sandboxes/b/execs/${rec.id}/stdin?eof=0`, {
      method: 'POST',
      body: new Uint8Array([104, 105, 10]),
    });
    assert.equal(w.status, 200);
    const call = api.calls.at(-1);
    assert.deepEqual([...((call?.args[2] as Buffer | undefined) ?? [])], [104, 105, 10]);
    assert.equal(call?.args[3], false);
    const out = (await (
      await json('GET', `/v1/sandboxes/b/execs/${rec.id}?after_seq=-1&wait_ms=60000`)
    ).json()) as {
      chunks: { data: string }[];
    };
    assert.equal(out.chunks.map((x) => x.data).join(''), 'hi\n');
    const c = (await (await json('POST', `/v1/sandboxes/b/execs/${rec.id}/cancel`)).json()) as {
      state: string;
    };
    assert.equal(c.state, 'cancelled');
    assert.equal(((await (await json('GET', '/v1/sandboxes/b/execs')).json()) as unknown[]).length, 1);
  });

  it('reads and writes raw file bytes with the size header; lists, stats, moves, deletes', async () => {
    const { json, app } = setup();
    await json('POST', '/v1/sandboxes', { name: 'b' });
    const bytes = new Uint8Array([1, 2, 3, 0, 200, 201]);
    const put = await app.request('/v1/sandboxes/b/files/content?path=/d/f.bin&mode=755&create_dirs=1', {
      method: 'PUT',
      body: bytes,
    });
    assert.equal(put.status, 200);
    const written = (await put.json()) as { size: number; etag: string };
    assert.equal(written.size, 6);
    assert.equal(put.headers.get('etag'), `"${written.etag}"`);
    const stale = await app.request('/v1/sandboxes/b/files/content?path=/d/f.bin', {
      method: 'PUT',
      headers: { 'if-match': '"fb-0"' },
      body: new Uint8Array([9]),
    });
    assert.equal(stale.status, 409, 'If-Match with another ETag is a conflict');
    const appended = await app.request('/v1/sandboxes/b/files/content?path=/d/f.bin&append=1', {
      method: 'PUT',
      headers: { 'if-match': `"${written.etag}"` },
      body: new Uint8Array([]),
    });
    assert.equal(appended.status, 200);
    const st = (await (await json('GET', '/v1/sandboxes/b/files/stat?path=/d/f.bin')).json()) as {
      mode: number;
    };
    assert.equal(st.mode, 0o755);
    const get = await app.request('/v1/sandboxes/b/files/content?path=/d/f.bin&offset=2&length=3');
    assert.equal(get.headers.get('x-forkbox-file-size'), '6');
    assert.match(get.headers.get('etag') ?? '', /^"fb-[0-9a-f]{32}"$/);
    assert.deepEqual([...new Uint8Array(await get.arrayBuffer())], [3, 0, 200]);
    const ls = (await (await json('GET', '/v1/sandboxes/b/files/list?path=/d&recursive=1')).json()) as {
      entries: { path: string }[];
    };
    assert.deepEqual(
      ls.entries.map((e) => e.path),
      ['/d/f.bin'],
    );
    assert.equal(
      (await json('POST', '/v1/sandboxes/b/files/move', { from: '/d/f.bin', to: '/d/g' })).status,
      200,
    );
    assert.equal((await json('POST', '/v1/sandboxes/b/files/mkdir', { path: '/e' })).status, 200);
    assert.equal((await json('DELETE', '/v1/sandboxes/b/files?path=/d/g')).status, 200);
    assert.equal((await json('DELETE', '/v1/sandboxes/b/files?path=/d/g')).status, 404);
    const badMode = await app.request('/v1/sandboxes/b/files/content?path=/x&mode=999', {
      method: 'PUT',
      body: 'x',
    });
    assert.equal(badMode.status, 400);
  });

  it('runs code and resets the REPL', async () => {
    const { json } = setup();
    await json('POST', '/v1/sandboxes', { name: 'b' });
    const r = (await (await json('POST', '/v1/sandboxes/b/code', { code: '6 * 7' })).json()) as {
      value: string;
    };
    assert.equal(r.value, '42');
    assert.equal((await json('POST', '/v1/sandboxes/b/code/reset')).status, 200);
    assert.equal((await json('POST', '/v1/sandboxes/b/code', { code: 1 })).status, 400);
  });

  it('builds images streaming progress, imports, lists, removes; gc and df', async () => {
    const { json } = setup();
    const b = await json(
      'POST',
      '/v1/images/build',
      { distro: 'debian', suite: 'bookworm' },
      { accept: 'application/x-ndjson' },
    );
    const lines = (await b.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; event?: { phase: string }; result?: { name: string } });
    assert.deepEqual(
      lines.map((l) => l.type),
      ['progress', 'progress', 'progress', 'result'],
    );
    assert.equal(lines[2]?.event?.phase, 'shift');
    assert.equal(lines[3]?.result?.name, 'debian-bookworm');
    const plain = await json('POST', '/v1/images/import', { name: 'mine', source: '/tmp/rootfs' });
    assert.equal(plain.status, 201);
    assert.equal(((await (await json('GET', '/v1/images')).json()) as unknown[]).length, 3);
    assert.equal((await json('DELETE', '/v1/images/mine')).status, 200);
    assert.equal((await json('DELETE', '/v1/images/none')).status, 404);
    assert.equal((await json('POST', '/v1/images/build', { distro: 'arch' })).status, 400);
    assert.deepEqual(
      ((await (await json('POST', '/v1/gc')).json()) as { removedMounts: string[] }).removedMounts,
      ['/gone'],
    );
    assert.equal(((await (await json('GET', '/v1/df')).json()) as { totalBytes: number }).totalBytes, 10);
  });
});

describe('rest error mapping', () => {
  it('uses the catalog status and round-trips through fromErrorBody', () => {
    const { status, body } = toHttpError(new ForkboxError('too_large', 'too big', { limit: 1 }));
    assert.equal(status, 413);
    const back = fromErrorBody(status, body);
    assert.equal(back.code, 'too_large');
    assert.equal(back.message, 'too big');
    assert.deepEqual(back.details, { limit: 1 });
  });
  it('wraps unknown errors as internal 500', () => {
    const { status, body } = toHttpError(new Error('kaboom'));
    assert.equal(status, 500);
    assert.equal(body.error.code, 'internal');
    assert.match(body.error.message, /kaboom/);
  });
  it('maps bodies without a forkbox error by status', () => {
    assert.equal(fromErrorBody(502, 'Bad Gateway').code, 'unavailable');
    assert.equal(fromErrorBody(500, { error: { code: 'nope', message: 'x' } }).code, 'internal');
  });
});
