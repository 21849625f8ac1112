/**
 * The warm pool (service/warm-pool.ts) on a real `forkbox serve --pool 2`: creates take a ready sandbox
 * (a hit on /metrics), the pool refills, a pooled sandbox is invisible until taken and carries nothing
 * from before, creates it cannot serve still work (misses), `forkbox run` takes from it, a template's
 * own `pool` overrides the daemon's, and deleting the template drains its pool.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createDaemonClient, type DaemonClient } from '../../src/transports/daemon-client.ts';
import { cliFor } from '../helpers/cli.ts';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

const why = nativeUnavailable();

describe('warm pool: forkbox serve --pool 2', () => {
  let stateDir = '';
  let daemon: ServedDaemon | undefined;
  let api: DaemonClient;

  /** A pool metric of a template from /metrics (0 when absent). */
  async function metric(name: string, template = 'default'): Promise<number> {
    const text = await (await fetch(`${daemon?.url}/metrics`)).text();
    const m = new RegExp(`^${name}\\{template="${template}"\\} (\\d+)$`, 'm').exec(text);
    return m?.[1] === undefined ? 0 : Number(m[1]);
  }
  const full = (template = 'default', n = 2) =>
    waitFor(async () => (await metric('forkbox_pool_sandboxes', template)) === n, {
      what: `the ${template} pool holds ${n}`,
      timeoutMs: 60_000,
    });

  before(async () => {
    if (why) throw new Error(`this test needs the native runtime: ${why}`);
    stateDir = makeStateDir();
    daemon = await startServe(stateDir, ['--pool', '2']);
    api = createDaemonClient({ url: daemon.url });
    await full();
  });
  after(async () => {
    api?.close();
    await stopServeAndClean(daemon?.child, stateDir);
  });

  it('keeps its sandboxes out of every listing until they are taken', async () => {
    assert.equal(await metric('forkbox_pool_target'), 2);
    assert.deepEqual(await api.listSandboxes({ all: true }), []);
    assert.deepEqual((await api.status()).sandboxes, {});
  });

  it('serves a create (a hit), refills, and hands out a sandbox that carries nothing from before', async () => {
    const hits = await metric('forkbox_pool_hits_total');
    const a = await api.createSandbox({});
    assert.equal(await metric('forkbox_pool_hits_total'), hits + 1);
    assert.equal(a.state, 'running');
    assert.deepEqual(a.labels, {});
    assert.equal(a.expiresAt, null);
    // Its exec path was warmed while pooled (one `true`), which leaves no record a tenant could see.
    assert.deepEqual(await api.listExecs(a.id), []);
    assert.equal((await api.exec(a.id, { argv: ['hostname'] })).stdout, `${a.id}\n`);
    assert.deepEqual(
      (await api.listSandboxes()).map((s) => s.id),
      [a.id],
    );
    await full();
    // Leave traces in it, then take the next one: none of them is there.
    await api.exec(a.id, { cmd: 'echo secret > /tmp/trace; echo secret > /root/trace' });
    await api.runCode(a.id, { code: 'leaked = 42' });
    await api.killSandbox(a.id);
    const b = await api.createSandbox({ labels: { team: 'x' }, ttlSeconds: 600 });
    assert.equal(await metric('forkbox_pool_hits_total'), hits + 2);
    assert.notEqual(b.id, a.id);
    assert.deepEqual(b.labels, { team: 'x' }, 'only the labels asked for: none of the pool');
    assert.ok(b.expiresAt !== null, 'the TTL asked for is applied at take');
    const ls = await api.exec(b.id, { cmd: 'cat /tmp/trace /root/trace 2>&1; true' });
    assert.match(ls.stdout, /No such file/);
    assert.doesNotMatch(ls.stdout, /secret/);
    const r = await api.runCode(b.id, { code: "'leaked' in globals()" });
    assert.equal(r.value, 'False');
    const env = await api.exec(b.id, { argv: ['env'] });
    assert.doesNotMatch(env.stdout, /forkbox\.pool|FORKBOX_POOL/i);
    await api.killSandbox(b.id);
    await full();
  });

  it('still creates what it cannot serve (env, name, limits): misses, fresh sandboxes', async () => {
    const hits = await metric('forkbox_pool_hits_total');
    const misses = await metric('forkbox_pool_misses_total');
    const withEnv = await api.createSandbox({ env: { GREETING: 'hi' } });
    assert.equal((await api.exec(withEnv.id, { cmd: 'echo $GREETING' })).stdout, 'hi\n');
    const named = await api.createSandbox({ name: 'pool-named' });
    assert.equal((await api.exec(named.id, { argv: ['hostname'] })).stdout, 'pool-named\n');
    const small = await api.createSandbox({ memoryMb: 200 });
    assert.equal(small.limits.memoryBytes, 200 * 1024 * 1024);
    assert.equal(await metric('forkbox_pool_misses_total'), misses + 3);
    assert.equal(await metric('forkbox_pool_hits_total'), hits);
    assert.equal(await metric('forkbox_pool_sandboxes'), 2, 'the pool was not touched');
    for (const s of [withEnv, named, small]) await api.killSandbox(s.id);
  });

  it('serves `forkbox run`', async () => {
    const hits = await metric('forkbox_pool_hits_total');
    const out = cliFor(stateDir).ok('run', '--', 'echo', 'from the pool');
    assert.equal(out, 'from the pool\n');
    assert.equal(await metric('forkbox_pool_hits_total'), hits + 1);
    await full();
  });

  it("a template's own pool overrides the daemon's; deleting the template drains it", async () => {
    // Templates are host administration: through the CLI on the daemon's socket.
    const cli = cliFor(stateDir);
    cli.ok('templates', 'define', 'pooled', '--prewarm', 'json', '--pool', '1');
    assert.match(cli.ok('templates', 'ls'), /pooled\s+debian\s+json\s+1\s/);
    await full('pooled', 1);
    assert.equal(await metric('forkbox_pool_target', 'pooled'), 1);
    const s = await api.createSandbox({ template: 'pooled' });
    assert.equal(await metric('forkbox_pool_hits_total', 'pooled'), 1);
    assert.equal(s.labels['forkbox.template'], 'pooled');
    assert.equal((await api.runCode(s.id, { code: "'json' in __import__('sys').modules" })).value, 'True');
    await api.killSandbox(s.id);
    await full('pooled', 1);
    cli.ok('templates', 'rm', 'pooled');
    assert.equal(await metric('forkbox_pool_sandboxes', 'pooled'), 0);
    assert.deepEqual(await api.listSandboxes({ all: false }), []);
  });
});
