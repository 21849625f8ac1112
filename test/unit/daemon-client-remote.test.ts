/**
 * The daemon client over a TCP base URL: URL and token validation, the token file, the bearer header,
 * and the error mapping (401, 403 on an admin route, connection refused) against the real HTTP app
 * over the real engine (fake runtime), served on 127.0.0.1:0.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readTokenFile, resolveRemote } from '../../src/cli/remote.ts';
import { type ForkboxError, isForkboxError } from '../../src/domain/errors.ts';
import { createHttpApp } from '../../src/protocol/http/app.ts';
import { guardConfig } from '../../src/protocol/http/guards.ts';
import { createTokenStore, parseTokenFile } from '../../src/protocol/http/tokens.ts';
import type { ExecOutputChunk } from '../../src/service/ports.ts';
import { createDaemonClient } from '../../src/transports/daemon-client.ts';
import { parseDaemonUrl } from '../../src/transports/daemon-endpoint.ts';
import { type HttpServer, serveHttp } from '../../src/transports/http-server.ts';
import { createTestEngine, type TestEngine } from '../helpers/test-engine.ts';

const TOKEN = 'remote-token-0123456789abcdef';

async function rejectsWith(p: Promise<unknown>, code: string, message?: RegExp): Promise<ForkboxError> {
  try {
    await p;
  } catch (e) {
    assert.ok(isForkboxError(e), `expected a ForkboxError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (message) assert.match(e.message, message);
    return e;
  }
  assert.fail(`expected a ${code} error`);
}

function throwsCode(fn: () => unknown, code: string, message?: RegExp): ForkboxError {
  try {
    fn();
  } catch (e) {
    assert.ok(isForkboxError(e), `expected a ForkboxError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (message) assert.match(e.message, message);
    return e;
  }
  assert.fail(`expected a ${code} error`);
}

describe('parseDaemonUrl', () => {
  it('accepts http and https base URLs, dropping a trailing slash', () => {
    assert.equal(parseDaemonUrl('http://127.0.0.1:7777').href, 'http://127.0.0.1:7777/');
    assert.equal(parseDaemonUrl(' https://box.example/forkbox/ ').pathname, '/forkbox');
    assert.equal(parseDaemonUrl('http://[::1]:7777/').hostname, '[::1]');
  });
  it('refuses other schemes, garbage, credentials, query and fragment', () => {
    throwsCode(() => parseDaemonUrl('ftp://h:1'), 'invalid_argument', /http:\/\/ or https:\/\//);
    throwsCode(() => parseDaemonUrl('127.0.0.1:7777'), 'invalid_argument');
    throwsCode(() => parseDaemonUrl('not a url'), 'invalid_argument', /not a URL/);
    const cred = throwsCode(() => parseDaemonUrl('http://u:s3cret@h:1'), 'invalid_argument', /FORKBOX_TOKEN/);
    assert.doesNotMatch(cred.message, /s3cret/);
    throwsCode(() => parseDaemonUrl('http://h:1/?token=x'), 'invalid_argument');
    throwsCode(() => parseDaemonUrl('http://h:1/#x'), 'invalid_argument');
  });
});

describe('token file and remote resolution', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'fbx-remote-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the first line of the token file, trimmed', () => {
    const f = join(dir, 'tok');
    writeFileSync(f, `  ${TOKEN}  \nsecond line ignored\n`, { mode: 0o600 });
    assert.equal(readTokenFile(f), TOKEN);
  });
  it('refuses a missing, empty or multi-word token file without printing its content', () => {
    throwsCode(() => readTokenFile(join(dir, 'none')), 'not_found', /none/);
    const empty = join(dir, 'empty');
    writeFileSync(empty, '\n');
    throwsCode(() => readTokenFile(empty), 'invalid_argument', /empty/);
    const words = join(dir, 'words');
    writeFileSync(words, 'TOKEN-abc alice\n');
    const e = throwsCode(() => readTokenFile(words), 'invalid_argument', /just the bearer token/);
    assert.doesNotMatch(e.message, /TOKEN-abc/);
  });
  it('--url beats FORKBOX_URL, --token-file beats FORKBOX_TOKEN; no URL is local mode', () => {
    const f = join(dir, 'tok2');
    writeFileSync(f, 'from-file-token-0123456789\n');
    const env = { FORKBOX_URL: 'http://env:1', FORKBOX_TOKEN: 'from-env-token-0123456789' };
    assert.equal(resolveRemote({}, {}), undefined);
    assert.equal(resolveRemote({}, { FORKBOX_URL: '', FORKBOX_TOKEN: 'x' }), undefined);
    const a = resolveRemote({}, env);
    assert.equal(a?.url.host, 'env:1');
    assert.equal(a?.token, 'from-env-token-0123456789');
    const b = resolveRemote({ url: 'https://flag:2', tokenFile: f }, env);
    assert.equal(b?.url.href, 'https://flag:2/');
    assert.equal(b?.token, 'from-file-token-0123456789');
    assert.equal(resolveRemote({ url: 'http://h:1' }, {})?.token, undefined);
    throwsCode(() => resolveRemote({ tokenFile: f }, {}), 'invalid_argument', /--url/);
    throwsCode(
      () => resolveRemote({}, { FORKBOX_URL: 'http://h:1', FORKBOX_TOKEN: 'a b' }),
      'invalid_argument',
    );
  });
});

describe('daemon client over a TCP URL (real HTTP app, real engine over the fake runtime)', () => {
  let server: HttpServer;
  let t: TestEngine;

  before(async () => {
    t = createTestEngine();
    const http = createHttpApp({
      engine: { scoped: (ctx) => t.scoped(ctx), attachSession: () => () => undefined },
      version: 't',
      tokens: createTokenStore(parseTokenFile(`${TOKEN} alice\n`)),
      guard: () => guardConfig({ listenHost: '127.0.0.1', port: 0 }),
    });
    server = await serveHttp(http.app, '127.0.0.1', 0);
  });
  after(async () => {
    await server.close({ graceMs: 100 });
    await t.close();
  });

  it('with the token: calls, streamed exec output, healthz', async () => {
    const client = createDaemonClient({ url: server.url, token: TOKEN });
    try {
      assert.equal(client.target, server.url);
      assert.equal(await client.health(), true);
      const sb = await client.createSandbox({ name: 'remote' });
      assert.equal(sb.name, 'remote');
      assert.equal(t.store.getSandbox(sb.id)?.tenant, 'alice', 'the token’s tenant owns it');
      assert.ok((await client.listSandboxes()).some((s) => s.id === sb.id));
      const chunks: ExecOutputChunk[] = [];
      const out = await client.exec(sb.id, { argv: ['echo', 'hi'] }, { onOutput: (c) => chunks.push(c) });
      assert.equal(out.exitCode, 0);
      assert.ok(chunks.length >= 1, 'streamed chunks arrive over TCP as NDJSON');
      await rejectsWith(client.getSandbox('nope'), 'not_found');
    } finally {
      client.close();
    }
  });

  it('401 without a token or with a wrong one: unauthenticated, naming FORKBOX_TOKEN', async () => {
    const none = createDaemonClient({ url: server.url });
    const wrong = createDaemonClient({ url: server.url, token: 'wrong-token-0123456789abcdef' });
    try {
      const e = await rejectsWith(
        none.listSandboxes(),
        'unauthenticated',
        /needs a bearer token.*FORKBOX_TOKEN/,
      );
      assert.match(e.message, new RegExp(server.url.replace(/[.]/g, '\\.')));
      const w = await rejectsWith(
        wrong.listSandboxes(),
        'unauthenticated',
        /did not accept the token.*FORKBOX_TOKEN/,
      );
      assert.doesNotMatch(w.message, /wrong-token/);
      await rejectsWith(none.readFile('x', '/etc/hostname'), 'unauthenticated', /FORKBOX_TOKEN/);
    } finally {
      none.close();
      wrong.close();
    }
  });

  it('403 on a host administration route keeps the permission_denied message', async () => {
    const client = createDaemonClient({ url: server.url, token: TOKEN });
    try {
      await rejectsWith(client.gc(), 'permission_denied', /host administration route.*on the host/);
      await rejectsWith(client.df(), 'permission_denied', /host administration/);
      // Reading the image list is not host administration: it is served, the same as in-process.
      assert.deepEqual(
        (await client.listImages()).map((i) => i.name),
        (await t.scoped({ tenant: 'alice' }).listImages()).map((i) => i.name),
      );
      assert.deepEqual(
        (await client.listImages()).map((i) => i.name),
        ['debian'],
      );
    } finally {
      client.close();
    }
  });

  it('sessions are socket-only: invalid_argument over a URL', async () => {
    const client = createDaemonClient({ url: server.url, token: TOKEN });
    try {
      await rejectsWith(client.openSession(), 'invalid_argument', /local socket/);
      throwsCode(() => client.withSession('abc'), 'invalid_argument', /local socket/);
    } finally {
      client.close();
    }
  });
});

describe('daemon client over a TCP URL: headers and connection errors', () => {
  let raw: Server;
  let base: string;
  const seen: { url: string | undefined; headers: IncomingHttpHeaders }[] = [];

  before(async () => {
    raw = createServer((req, res) => {
      seen.push({ url: req.url, headers: req.headers });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('[]');
    });
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
  });
  after(async () => {
    raw.closeAllConnections();
    await new Promise((r) => raw.close(r));
  });

  it('sends Authorization: Bearer only when a token is given, under the base path', async () => {
    const withTok = createDaemonClient({ url: `${base}/prefix/`, token: TOKEN });
    const without = createDaemonClient({ url: base });
    try {
      await withTok.listSandboxes({ all: true });
      await without.listSandboxes();
    } finally {
      withTok.close();
      without.close();
    }
    assert.equal(seen[0]?.url, '/prefix/v1/sandboxes?all=1');
    assert.equal(seen[0]?.headers.authorization, `Bearer ${TOKEN}`);
    assert.equal(seen[1]?.url, '/v1/sandboxes');
    assert.equal(seen[1]?.headers.authorization, undefined);
  });

  it('connection refused: unavailable, naming the URL and what to check', async () => {
    // A port that was just free: bind, read it, close.
    const tmp = createServer();
    await new Promise<void>((r) => tmp.listen(0, '127.0.0.1', r));
    const port = (tmp.address() as AddressInfo).port;
    await new Promise((r) => tmp.close(r));
    const client = createDaemonClient({ url: `http://127.0.0.1:${port}`, token: TOKEN });
    try {
      const e = await rejectsWith(client.status(), 'unavailable', /forkbox serve --listen/);
      assert.match(e.message, new RegExp(`http://127\\.0\\.0\\.1:${port}`));
      assert.match(e.message, /ECONNREFUSED/);
      assert.doesNotMatch(e.message, new RegExp(TOKEN));
      assert.equal(await client.health(300), false);
    } finally {
      client.close();
    }
  });
});
