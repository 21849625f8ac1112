/**
 * Namespaces through the HTTP listener (REST and the real CLI with `--url`), over the real engine: one
 * name in two namespaces, `ls --namespace '*'`, kill by name within a namespace, `ns/name` references,
 * and a token limited to namespaces refused outside them (a create elsewhere is permission_denied;
 * another namespace's sandbox is not found; its `*` lists only its own).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ERROR_CODES } from '../../src/domain/errors.ts';
import { type Listener, startListener } from '../../src/transports/http-listener.ts';
import { ROOT } from '../helpers/daemon.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();
const FULL = 'tok-ns-full-5c1d9a7e3b2f4a60';
const TEAM = 'tok-ns-team-8e2a6c4b1d3f5a70';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('namespaces over REST and the CLI', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let listener: Listener;
  let url = '';

  const cli = (args: string[], token = FULL) =>
    new Promise<Run>((resolve) => {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        FORKBOX_TOKEN: token,
        FORKBOX_STATE_DIR: join(fx.stateDir, 'never'),
      };
      delete env.FORKBOX_URL;
      const child = spawn(process.execPath, [join(ROOT, 'bin/forkbox.js'), '--url', url, ...args], {
        cwd: ROOT,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 60_000,
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
      });
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    });
  const json = async <T>(args: string[], token = FULL): Promise<T> => {
    const r = await cli(['--json', ...args], token);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as T;
  };
  const rest = (path: string, init: RequestInit = {}, token = FULL) =>
    fetch(`${url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    });

  before(async () => {
    fx = await openNative();
    const tokens = join(fx.stateDir, 'tokens');
    writeFileSync(tokens, `${FULL} default\n${TEAM} default team,lab\n`, { mode: 0o600 });
    listener = await startListener({
      engine: fx.opened.engine,
      version: 'test',
      host: '127.0.0.1',
      port: 0,
      tokenFile: tokens,
      stateDir: fx.stateDir,
    });
    url = listener.server.url;
  });
  after(async () => {
    await listener?.close(2000);
    await fx?.close();
  });

  it("one name in two namespaces; ls by namespace and '*'; kill by name in one", async () => {
    const a = await json<{ id: string; namespace: string }>(['create', '--name', 'web']);
    const b = await json<{ id: string; namespace: string }>(['create', '--name', 'web', '-n', 'prod']);
    assert.equal(a.namespace, 'default');
    assert.equal(b.namespace, 'prod');
    const dup = await cli(['create', '--name', 'web', '--namespace', 'prod']);
    assert.equal(dup.code, ERROR_CODES.already_exists.exit, dup.stderr);

    const ids = (l: { id: string }[]) => l.map((s) => s.id).sort();
    assert.deepEqual(ids(await json(['ls'])), [a.id]);
    assert.deepEqual(ids(await json(['ls', '--namespace', 'prod'])), [b.id]);
    assert.deepEqual(ids(await json(['ls', '--namespace', '*'])), [a.id, b.id].sort());
    const table = await cli(['ls', '--namespace', '*']);
    assert.match(table.stdout, /NAMESPACE/);
    assert.match(table.stdout, new RegExp(`${b.id}\\s+prod\\s+web`));

    // REST: a qualified reference in the path, the namespace in the query.
    const got = await rest(`/v1/sandboxes/${encodeURIComponent('prod/web')}`);
    assert.equal(got.status, 200);
    assert.equal(((await got.json()) as { id: string }).id, b.id);
    const listed = await rest('/v1/sandboxes?namespace=prod');
    assert.deepEqual(ids((await listed.json()) as { id: string }[]), [b.id]);

    const exec = await cli(['exec', 'prod/web', '--', 'true']);
    assert.equal(exec.code, 0, exec.stderr);
    const k = await json<{ id: string }[]>(['kill', 'web', '--namespace', 'prod']);
    assert.deepEqual(ids(k), [b.id]);
    assert.equal((await fx.opened.engine.getSandbox(a.id)).state, 'running', "'default' untouched");
    await json(['kill', a.id]);
  });

  it('a token limited to namespaces is refused outside them', async () => {
    const other = await json<{ id: string }>(['create', '--name', 'x', '-n', 'ops']);
    const mine = await json<{ id: string; namespace: string }>(['create', '--name', 'x'], TEAM);
    assert.equal(mine.namespace, 'team', "the token's first namespace is its default");

    const denied = await rest('/v1/sandboxes', { method: 'POST', body: '{"namespace":"ops"}' }, TEAM);
    assert.equal(denied.status, 403);
    assert.equal(((await denied.json()) as { error: { code: string } }).error.code, 'permission_denied');
    const cliDenied = await cli(['create', '-n', 'ops'], TEAM);
    assert.equal(cliDenied.code, ERROR_CODES.permission_denied.exit, cliDenied.stderr);

    for (const ref of [other.id, 'ops/x']) {
      const r = await rest(`/v1/sandboxes/${encodeURIComponent(ref)}`, {}, TEAM);
      assert.equal(r.status, 404, ref);
      const kill = await rest(`/v1/sandboxes/${encodeURIComponent(ref)}`, { method: 'DELETE' }, TEAM);
      assert.equal(kill.status, 404, ref);
    }
    const all = await json<{ id: string }[]>(['ls', '--namespace', '*'], TEAM);
    assert.deepEqual(
      all.map((s) => s.id),
      [mine.id],
    );
    assert.deepEqual(await json(['ls', '--namespace', 'ops'], TEAM), []);
    assert.equal((await fx.opened.engine.getSandbox('ops/x')).state, 'running');
    await json(['kill', 'x'], TEAM);
    await json(['kill', 'ops/x']);
  });
});
