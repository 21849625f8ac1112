import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ForkboxError, isForkboxError } from '../../src/domain/errors.ts';
import { createLocalApp } from '../../src/protocol/rest/local-app.ts';
import type { ProgressEvent } from '../../src/service/api.ts';
import type { ExecOutputChunk } from '../../src/service/ports.ts';
import { createDaemonClient, type DaemonClient } from '../../src/transports/daemon-client.ts';
import { connectOrStartDaemon } from '../../src/transports/daemon-launcher.ts';
import { serveUnix, type UnixServer } from '../../src/transports/unix-server.ts';
import {
  addFailurePrograms,
  createTestEngine,
  type RecordedApi,
  type TestEngine,
} from '../helpers/test-engine.ts';

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

const silentLog = { info() {}, debug() {}, warn() {} };

describe('daemon client over a unix socket', () => {
  let dir: string;
  let server: UnixServer;
  let client: DaemonClient;
  let t: TestEngine;
  let api: RecordedApi;
  let gcLive: Set<string> | undefined;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fbx-client-'));
    t = createTestEngine({
      hostGc: async (live) => {
        gcLive = live;
        return { removedMounts: ['/gone/mount'], removedCgroups: [], removedDirs: [] };
      },
      diskUsage: async () => ({
        stateDir: '/s',
        images: [{ name: 'debian', bytes: 10 }],
        sandboxes: [],
        totalBytes: 10,
      }),
    });
    addFailurePrograms(t.runtime);
    api = t.api;
    server = await serveUnix(createLocalApp(api, { version: 't' }), join(dir, 'forkbox.sock'));
    client = createDaemonClient({ socketPath: join(dir, 'forkbox.sock') });
  });
  after(async () => {
    client.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
    await t.close();
  });

  it('creates the socket with mode 0660 and answers /healthz', async () => {
    const st = statSync(join(dir, 'forkbox.sock'));
    assert.ok(st.isSocket());
    assert.equal(st.mode & 0o777, 0o660);
    assert.equal(await client.health(), true);
    assert.equal((await client.status()).runtime, 'fake');
  });

  it('round-trips sandbox lifecycle calls', async () => {
    const sb = await client.createSandbox({ name: 'one', cpus: 0.5, labels: { k: 'v' } });
    assert.equal(sb.name, 'one');
    assert.equal(sb.limits.cpus, 0.5);
    assert.equal((await client.listSandboxes({ labels: { k: 'v' } })).length, 1);
    assert.deepEqual(api.calls.at(-1), { method: 'listSandboxes', args: [{ labels: { k: 'v' } }] });
    const usage = (await client.getSandbox('one', { usage: true })).usage;
    assert.deepEqual(usage, (await api.getSandbox('one', { usage: true })).usage);
    assert.ok(usage && usage.memoryBytes > 0);
    assert.equal((await client.pauseSandbox('one')).state, 'paused');
    assert.equal((await client.resumeSandbox('one')).state, 'running');
    const before = Date.now();
    const expires = Date.parse((await client.extendSandbox('one', 3600)).expiresAt ?? '');
    assert.ok(expires >= before + 3600_000 && expires <= Date.now() + 3600_000);
  });

  it('maps error bodies back to ForkboxError with the same code and details', async () => {
    const e = await rejectsWith(client.getSandbox('ghost'), 'not_found', /no sandbox 'ghost'/);
    assert.deepEqual(e.details, { sandbox: 'ghost' });
    await rejectsWith(client.createSandbox({ image: 'missing' }), 'not_found', /images build debian/);
    await rejectsWith(client.createSandbox({ memoryMb: -1 }), 'invalid_argument', /memoryMb/);
    await rejectsWith(client.exec('one', { argv: ['fail'] }), 'busy');
    await rejectsWith(client.exec('one', { argv: ['fail'] }, { onOutput: () => {} }), 'busy');
  });

  it('streams exec output chunk by chunk, with stdin and binary-safe data', async () => {
    const chunks: ExecOutputChunk[] = [];
    const o = await client.exec(
      'one',
      { cmd: 'echo a b; echo err >&2; exit 3' },
      { onOutput: (c) => chunks.push(c) },
    );
    assert.equal(o.exitCode, 3);
    assert.deepEqual(
      chunks.map((c) => [c.stream, c.data.toString()]),
      [
        ['stdout', 'a b\n'],
        ['stderr', 'err\n'],
      ],
    );
    const bin: ExecOutputChunk[] = [];
    await client.exec(
      'one',
      { argv: ['cat'], stdin: Buffer.from([0, 1, 255]) },
      { onOutput: (c) => bin.push(c) },
    );
    assert.deepEqual([...Buffer.concat(bin.map((c) => c.data))], [0, 1, 255]);
    const plain = await client.exec('one', { cmd: 'echo plain' });
    assert.equal(plain.stdout, 'plain\n');
    const killed = await client.exec(
      'one',
      { argv: ['sleep', '600'], timeoutSeconds: 0.1 },
      { onOutput: () => {} },
    );
    assert.equal(killed.signal, 9);
    assert.equal(killed.timedOut, true);

    // A failure after output started: the chunk arrives, then the error with its code.
    const seen: string[] = [];
    await rejectsWith(
      client.exec('one', { argv: ['die'] }, { onOutput: (c) => seen.push(c.data.toString()) }),
      'sandbox_gone',
    );
    assert.deepEqual(seen, ['partial\n']);
  });

  it('round-trips background execs', async () => {
    const rec = await client.startExec('one', { argv: ['cat'], stdin: true });
    await client.writeExecStdin('one', rec.id, Buffer.from('hi'), false);
    const call = api.calls.at(-1);
    assert.equal(call?.method, 'writeExecStdin');
    assert.deepEqual((call?.args[2] as Buffer | undefined)?.toString(), 'hi');
    assert.equal(call?.args[3], false);
    const p = await client.pollExec('one', rec.id, { afterSeq: -1, waitMs: 60_000 });
    assert.equal(p.chunks[0]?.data, 'hi');
    assert.equal(p.done, false);
    const rest = await client.pollExec('one', rec.id, { afterSeq: p.nextSeq });
    assert.deepEqual(rest.chunks, []);
    assert.equal((await client.cancelExec('one', rec.id)).state, 'cancelled');
    assert.ok((await client.listExecs('one')).some((e) => e.id === rec.id && e.state === 'cancelled'));
  });

  it('runs code and resets', async () => {
    await client.runCode('one', { code: 'x = 6 * 7' });
    const r = await client.runCode('one', { code: 'x' });
    assert.equal(r.value, '42');
    const bad = await client.runCode('one', { code: "raise ValueError('boom')" });
    assert.equal(bad.ok, false);
    assert.equal(bad.error?.type, 'ValueError');
    await client.resetCode('one');
    assert.equal(api.calls.at(-1)?.method, 'resetCode');
  });

  it('moves binary file content intact, with offsets and the full size', async () => {
    const data = Buffer.alloc(300_000);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7) & 0xff;
    const written = await client.writeFile('one', '/data/x.bin', data, { mode: 0o600, createDirs: true });
    assert.equal(written.size, data.length);
    assert.deepEqual(api.calls.at(-1)?.args[3], { mode: 0o600, createDirs: true });
    const whole = await client.readFile('one', '/data/x.bin');
    assert.equal(whole.size, data.length);
    assert.equal(whole.etag, written.etag, 'the ETag header comes back as the etag');
    await client.writeFile('one', '/data/x.bin', Buffer.from('z'), { append: true, ifMatch: written.etag });
    assert.deepEqual(api.calls.at(-1)?.args[3], { append: true, ifMatch: written.etag });
    await assert.rejects(
      client.writeFile('one', '/data/x.bin', Buffer.from('z'), { ifMatch: written.etag }),
      (e: Error & { code?: string }) => e.code === 'conflict',
    );
    await client.writeFile('one', '/data/x.bin', data, { mode: 0o600 });
    assert.ok(whole.data.equals(data));
    const part = await client.readFile('one', '/data/x.bin', { offset: 1000, length: 10 });
    assert.equal(part.size, data.length);
    assert.ok(part.data.equals(data.subarray(1000, 1010)));
    assert.equal((await client.statFile('one', '/data/x.bin')).size, data.length);
    assert.equal((await client.listFiles('one', '/data', { recursive: true })).entries.length, 1);
    await client.moveFile('one', '/data/x.bin', '/data/y.bin', { overwrite: true });
    await client.mkdir('one', '/m');
    await client.deleteFile('one', '/data/y.bin');
    await rejectsWith(client.readFile('one', '/data/y.bin'), 'not_found', /y\.bin/);
    await rejectsWith(client.statFile('one', '/nowhere'), 'not_found');
  });

  it('streams image progress and returns the record; maps stream errors', async () => {
    const events: ProgressEvent[] = [];
    const img = await client.buildImage({ distro: 'debian', packages: ['curl'] }, (e) => events.push(e));
    assert.equal(img.name, 'debian-bookworm');
    assert.deepEqual(
      events.map((e) => e.phase),
      ['download', 'download', 'shift'],
    );
    const imp = await client.importImage('mine', '/tmp/rootfs');
    assert.equal(imp.source, 'import:/tmp/rootfs');
    const ev: ProgressEvent[] = [];
    await rejectsWith(
      client.importImage('bad', '/tmp/bad', (e) => ev.push(e)),
      'invalid_argument',
      /not a root filesystem/,
    );
    assert.equal(ev.length, 1);
    assert.deepEqual((await client.listImages()).map((i) => i.name).sort(), [
      'debian',
      'debian-bookworm',
      'mine',
    ]);
    await client.removeImage('mine');
    await rejectsWith(client.removeImage('zzz'), 'not_found');
    const gc = await client.gc();
    assert.deepEqual(gc, {
      removedSandboxes: [],
      removedMounts: ['/gone/mount'],
      removedCgroups: [],
      removedDirs: [],
    });
    assert.ok(gcLive?.has((await api.getSandbox('one')).id), 'gc spares what lives');
    assert.equal((await client.df()).totalBytes, 10);
  });

  it('kills', async () => {
    assert.equal((await client.killSandbox('one')).state, 'killed');
  });
});

describe('unix server and launcher', () => {
  it('replaces a stale socket file but refuses a live one or a non-socket', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fbx-srv-'));
    const sock = join(dir, 'forkbox.sock');
    try {
      const app = createLocalApp(createTestEngine().api);
      const s1 = await serveUnix(app, sock);
      await rejectsWith(serveUnix(app, sock), 'conflict', /already serves/);
      await s1.close();
      // A stale socket, as a crashed daemon leaves it: the file stays, nothing listens. (Closing a server
      // unlinks its path, so move the file aside while closing.)
      const { createServer } = await import('node:net');
      const raw = createServer();
      await new Promise<void>((r) => raw.listen(sock, r));
      renameSync(sock, `${sock}.aside`);
      await new Promise<void>((r) => raw.close(() => r()));
      renameSync(`${sock}.aside`, sock);
      assert.ok(statSync(sock).isSocket());
      const s2 = await serveUnix(app, sock);
      const c = createDaemonClient({ socketPath: sock });
      assert.equal(await c.health(), true);
      c.close();
      await s2.close();
      assert.throws(() => statSync(sock), /ENOENT/);

      writeFileSync(sock, 'not a socket');
      await rejectsWith(serveUnix(app, sock), 'conflict', /not a socket/);
      rmSync(sock);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a client of a missing daemon gets `unavailable` saying what to run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fbx-none-'));
    try {
      const c = createDaemonClient({ socketPath: join(dir, 'forkbox.sock') });
      await rejectsWith(c.listSandboxes(), 'unavailable', /sudo forkbox serve/);
      c.close();
      await rejectsWith(
        connectOrStartDaemon({ stateDir: dir, log: silentLog, allowStart: false }),
        'unavailable',
        /forkbox --state-dir .* serve/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the launcher returns a client when the daemon answers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fbx-up-'));
    const server = await serveUnix(createLocalApp(createTestEngine().api), join(dir, 'forkbox.sock'));
    try {
      const c = await connectOrStartDaemon({ stateDir: dir, log: silentLog, allowStart: false });
      assert.equal((await c.status()).runtime, 'fake');
      c.close();
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the launcher starts a daemon and reports its log when it dies', async (t) => {
    if (process.getuid?.() !== 0) return t.skip('starting a daemon needs root');
    const dir = mkdtempSync(join(tmpdir(), 'fbx-start-'));
    const entry = join(dir, 'fake-entry.mjs');
    // A stand-in for bin/forkbox.js that fails at once, as a daemon with a broken host would.
    writeFileSync(entry, "console.error('fake daemon: cannot open state dir'); process.exit(3);\n");
    try {
      await rejectsWith(
        connectOrStartDaemon({
          stateDir: dir,
          log: silentLog,
          allowStart: true,
          entry,
          startTimeoutMs: 5000,
        }),
        'unavailable',
        /exited \(3\)[\s\S]*fake daemon: cannot open state dir/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
