/**
 * The real CLI (`node bin/forkbox.js --url …`) against a TCP listener started in-process on
 * 127.0.0.1:0 with a token file over the real engine: the token comes from FORKBOX_TOKEN, nothing
 * local is started or touched (FORKBOX_STATE_DIR points at a dir that must never appear), host
 * administration commands get the permission_denied message, and no token gets `unauthenticated`.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ERROR_CODES } from '../../src/domain/errors.ts';
import { type Listener, startListener } from '../../src/transports/http-listener.ts';
import { ROOT } from '../helpers/daemon.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();
const TOKEN = 'tok-cli-remote-3b9e1f0c7d2a4e6b';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('forkbox --url: the CLI against a remote daemon', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let listener: Listener;
  let url = '';
  let neverStateDir = '';
  let tokenFile = '';
  let box = '';

  /** Run the CLI asynchronously (a sync spawn would block the listener running in this process). */
  const cli = (
    args: string[],
    env: Record<string, string | undefined> = { FORKBOX_TOKEN: TOKEN },
    target = url,
  ) =>
    new Promise<Run>((resolve) => {
      const childEnv: NodeJS.ProcessEnv = { ...process.env, FORKBOX_STATE_DIR: neverStateDir };
      delete childEnv.FORKBOX_URL;
      delete childEnv.FORKBOX_TOKEN;
      for (const [k, v] of Object.entries(env)) if (v !== undefined) childEnv[k] = v;
      // stdin from /dev/null: `exec` reads a piped stdin to its end, and an open pipe would never end.
      const child = spawn(process.execPath, [join(ROOT, 'bin/forkbox.js'), '--url', target, ...args], {
        cwd: ROOT,
        env: childEnv,
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

  before(async () => {
    fx = await openNative();
    neverStateDir = join(fx.stateDir, 'must-not-exist');
    const tenants = join(fx.stateDir, 'tokens');
    writeFileSync(tenants, `${TOKEN} default\n`, { mode: 0o600 });
    tokenFile = join(fx.stateDir, 'client-token');
    writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    listener = await startListener({
      engine: fx.opened.engine,
      version: 'test',
      host: '127.0.0.1',
      port: 0,
      tokenFile: tenants,
      stateDir: fx.stateDir,
    });
    url = listener.server.url;
  });
  after(async () => {
    await listener?.close(2000);
    await fx?.close(); // kills the sandboxes (tenant 'default') and checks nothing is left mounted
  });

  it('create --json, exec (42 and the exit code), eval, ls, kill', async () => {
    const c = await cli(['--json', 'create', '--name', 'remote-box']);
    assert.equal(c.code, 0, c.stderr);
    box = (JSON.parse(c.stdout) as { id: string }).id;
    assert.ok(box);

    const e = await cli(['exec', box, '--', 'python3', '-c', 'print(6*7)']);
    assert.equal(e.code, 0, e.stderr);
    assert.equal(e.stdout, '42\n');
    const fail = await cli(['exec', box, '--', 'python3', '-c', 'import sys; sys.exit(3)']);
    assert.equal(fail.code, 3, fail.stderr);

    const ev = await cli(['eval', box, 'x = 6\nx * 7']);
    assert.equal(ev.code, 0, ev.stderr);
    assert.equal(ev.stdout.trim(), '42');

    const ls = await cli(['--json', 'ls']);
    assert.equal(ls.code, 0, ls.stderr);
    const list = JSON.parse(ls.stdout) as { id: string; state: string }[];
    assert.equal(list.find((s) => s.id === box)?.state, 'running');

    // The token from --token-file works as well as FORKBOX_TOKEN.
    const k = await cli(['--token-file', tokenFile, 'kill', box], {});
    assert.equal(k.code, 0, k.stderr);
    assert.equal((await fx.opened.engine.scoped({ tenant: 'default' }).getSandbox(box)).state, 'killed');
  });

  it('no token: the unauthenticated exit code and a message naming FORKBOX_TOKEN', async () => {
    const r = await cli(['ls'], {});
    assert.equal(r.code, ERROR_CODES.unauthenticated.exit);
    assert.match(r.stderr, /needs a bearer token: set FORKBOX_TOKEN/);
    assert.ok(r.stderr.includes(url), r.stderr);
    const wrong = await cli(['ls'], { FORKBOX_TOKEN: 'tok-wrong-000000000000000000' });
    assert.equal(wrong.code, ERROR_CODES.unauthenticated.exit);
    assert.doesNotMatch(wrong.stderr, /tok-wrong/);
  });

  it('images ls works; gc and df get the permission_denied message', async () => {
    const im = await cli(['--json', 'images', 'ls']);
    assert.equal(im.code, 0, im.stderr);
    assert.ok((JSON.parse(im.stdout) as { name: string }[]).some((i) => i.name === 'debian'));
    for (const cmd of ['gc', 'df']) {
      const r = await cli([cmd]);
      assert.equal(r.code, ERROR_CODES.permission_denied.exit, r.stderr);
      assert.match(r.stderr, /host administration route.*Run the matching 'forkbox' command on the host/);
    }
  });

  it('a URL where nothing listens: unavailable, naming the URL; never a local daemon or state dir', async () => {
    const r = await cli(['ls'], { FORKBOX_TOKEN: TOKEN }, 'http://127.0.0.1:1');
    assert.equal(r.code, ERROR_CODES.unavailable.exit);
    assert.match(
      r.stderr,
      /cannot reach the forkbox daemon at http:\/\/127\.0\.0\.1:1 .*forkbox serve --listen/,
    );
    assert.equal(existsSync(neverStateDir), false, 'remote mode never creates the local state dir');
  });

  it('forkbox mcp refuses --url with a pointer to URL/mcp', async () => {
    const r = await cli(['mcp']);
    assert.equal(r.code, ERROR_CODES.invalid_argument.exit);
    assert.match(r.stderr, /URL\/mcp/);
  });
});
