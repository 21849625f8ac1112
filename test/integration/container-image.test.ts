/**
 * forkbox as a container image (Dockerfile, scripts/build-container.sh, deploy/docker/entrypoint.sh),
 * with Debian's docker.io: a private dockerd (test/helpers/dockerd.ts) builds the image without a
 * registry, runs it privileged on a bind-mounted state dir, and the test drives it over HTTP with the
 * token the entrypoint made (the default image seeded from the host's: see seedDefaultImage); a sandbox's Python state is
 * forked; a daemon killed inside the container is started again and re-adopts the live sandboxes; a
 * container restart ends the sandboxes' processes — the new daemon starts each again on its kept files,
 * with a fresh REPL — and images, the token and snapshots' files survive (docs/CONTAINER.md, "What
 * survives a restart").
 *
 * As documented: the listener on the container's 0.0.0.0:7777, published on the host's 127.0.0.1:<free
 * port> (through the private dockerd's own bridge: test/helpers/dockerd.ts). Removed at the end: the
 * container, dockerd, the state dir, and what the container's daemon left on the host (cgroups, the btrfs
 * loop device). The dockerd's data root is kept in /var/cache/forkbox/test-dockerd for the next run on
 * this machine (its build cache: a rebuild with unchanged dependencies skips npm ci and apt-get), up to
 * CACHE_MAX_BYTES.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { mountsUnder } from '../../src/util/mountinfo.ts';
import { detachStateLoops, removeStateCgroups, stateLoops } from '../helpers/container-leftovers.ts';
import { ROOT } from '../helpers/daemon.ts';
import {
  dockerdMissing,
  type PrivateDockerd,
  runCmd,
  startDockerd,
  takeCachedDataRoot,
} from '../helpers/dockerd.ts';
import { defaultImage, nativeUnavailable } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

// Without root it is skipped like every native test; as root a missing requirement fails (before()).
const skip = process.getuid?.() === 0 ? false : 'needs root (dockerd, debootstrap, privileged containers)';

const MIN = 60_000;
/** Where the host's default image layer is mounted read-only in the container. */
const SEED = '/var/lib/forkbox-seed';

/** Capabilities Docker 20.10 knows that this process's bounding set lacks (their names, no CAP_). */
function missingCapabilities(): string[] {
  const known = ['CHOWN', 'DAC_OVERRIDE', 'DAC_READ_SEARCH', 'FOWNER', 'FSETID', 'KILL', 'SETGID'];
  known.push('SETUID', 'SETPCAP', 'LINUX_IMMUTABLE', 'NET_BIND_SERVICE', 'NET_BROADCAST', 'NET_ADMIN');
  known.push('NET_RAW', 'IPC_LOCK', 'IPC_OWNER', 'SYS_MODULE', 'SYS_RAWIO', 'SYS_CHROOT', 'SYS_PTRACE');
  known.push('SYS_PACCT', 'SYS_ADMIN', 'SYS_BOOT', 'SYS_NICE', 'SYS_RESOURCE', 'SYS_TIME', 'SYS_TTY_CONFIG');
  known.push('MKNOD', 'LEASE', 'AUDIT_WRITE', 'AUDIT_CONTROL', 'SETFCAP', 'MAC_OVERRIDE', 'MAC_ADMIN');
  known.push('SYSLOG', 'WAKE_ALARM', 'BLOCK_SUSPEND', 'AUDIT_READ');
  const hex = /^CapBnd:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0';
  const bnd = BigInt(`0x${hex}`);
  return known.filter((_, bit) => (bnd & (1n << BigInt(bit))) === 0n);
}

/** docs/CONTAINER.md's explicit alternative to --privileged, less the capabilities the host lacks. */
function explicitAccess(lacking: readonly string[]): string[] {
  return [
    '--cap-add',
    'ALL',
    ...lacking.flatMap((c) => ['--cap-drop', c]),
    '--security-opt',
    'seccomp=unconfined',
    '--security-opt',
    'apparmor=unconfined',
    '--security-opt',
    'systempaths=unconfined',
    '--cgroupns',
    'host',
    '-v',
    '/sys/fs/cgroup:/sys/fs/cgroup',
    '--device',
    '/dev/loop-control',
    '--device-cgroup-rule',
    'b 7:* rwm',
  ];
}

/** Bytes the cached data root may grow to before everything in it is dropped (boundCache). */
const CACHE_MAX_BYTES = 8 * 1024 ** 3;

/**
 * The cached data root keeps the untagged images of earlier builds: the legacy builder's cache, the build
 * stage's included (pruning dangling images would drop it). Past CACHE_MAX_BYTES it is emptied instead.
 */
async function boundCache(d: PrivateDockerd, dataRoot: string): Promise<void> {
  const bytes = Number.parseInt((await runCmd('du', ['-sb', dataRoot])).stdout, 10);
  if (bytes > CACHE_MAX_BYTES)
    await d.docker(['system', 'prune', '-af'], { allowFail: true, timeoutMs: 10 * MIN });
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const addr = srv.address();
  await new Promise<void>((r) => srv.close(() => r()));
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  return addr.port;
}

describe('forkbox as a container image (private dockerd)', { skip }, () => {
  // With the cached data root the tag is fixed: this run's build replaces the last run's image.
  let cache: ReturnType<typeof takeCachedDataRoot>;
  let tag = `forkbox-test:${randomBytes(4).toString('hex')}`;
  const name = `forkbox-test-${randomBytes(4).toString('hex')}`;
  let scratch = '';
  let stateDir = '';
  let d: PrivateDockerd | undefined;
  let base = '';
  let token = '';
  let built = false;

  /**
   * The default image, built inside the container on a first start, takes about 7 minutes there: the
   * state dir gets the host's instead (its record, its read-only layer mounted at SEED), and the
   * entrypoint's `forkbox images build debian` finds it up to date — as on any later start.
   */
  let seedMount: string[] = [];
  function seedDefaultImage() {
    const img = defaultImage();
    const layer = img.layers[0] ?? '';
    const inContainer = `${SEED}/${basename(layer)}`;
    mkdirSync(join(stateDir, 'images'), { recursive: true, mode: 0o700 });
    writeFileSync(join(stateDir, 'images', 'debian.json'), JSON.stringify({ ...img, layers: [inContainer] }));
    seedMount = ['-v', `${layer}:${inContainer}:ro`];
  }

  const call = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(120_000),
    });
    const text = await r.text();
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // not JSON: kept in text
    }
    return { status: r.status, text, json };
  };
  const code = async (sandbox: string, src: string) => {
    const r = await call('POST', `/v1/sandboxes/${sandbox}/code`, { code: src });
    assert.equal(r.status, 200, r.text);
    return r.json as {
      ok: boolean;
      value: string | null;
      error: { type: string } | null;
      restarted: boolean;
    };
  };
  const containerLog = async () => (d ? (await d.docker(['logs', name], { allowFail: true })).stderr : '');
  const healthy = async () => {
    try {
      return (await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2000) })).ok;
    } catch {
      return false;
    }
  };

  before(async () => {
    const missing = dockerdMissing() ?? nativeUnavailable();
    if (missing) throw new Error(`the container image test cannot run: ${missing}`);
    scratch = mkdtempSync('/var/tmp/forkbox-container-');
    stateDir = join(scratch, 'state');
    seedDefaultImage();
    cache = takeCachedDataRoot();
    if (cache) tag = 'forkbox-test:cached';
    d = await startDockerd(join(scratch, 'dockerd'), cache ? { dataRoot: cache.path } : {});
    base = `http://127.0.0.1:${await freePort()}`;
  });

  after(async () => {
    if (d) {
      await d.docker(['rm', '-f', name], { allowFail: true });
      if (cache) await boundCache(d, cache.path);
      else await d.docker(['rmi', '-f', tag], { allowFail: true });
      await d.stop();
    }
    cache?.release();
    await detachStateLoops(stateDir);
    const left = stateDir ? removeStateCgroups(stateDir) : [];
    // dockerd leaves its default network namespace bind-mounted under its exec root.
    for (const m of scratch ? mountsUnder(scratch) : []) await runCmd('umount', ['-l', m]);
    if (scratch) rmSync(scratch, { recursive: true, force: true });
    assert.deepEqual(left, [], 'cgroups the container left that could not be removed');
  });

  it('scripts/build-container.sh builds the image from the Dockerfile without a registry', {
    timeout: 25 * MIN,
  }, async (t) => {
    const started = Date.now();
    let tail = '';
    const r = await runCmd('bash', [join(ROOT, 'scripts/build-container.sh'), tag], {
      env: d?.env ?? process.env,
      timeoutMs: 24 * MIN,
      onStderr: (s) => {
        tail = (tail + s).slice(-8000);
      },
    });
    assert.equal(r.code, 0, `build-container.sh failed:\n${tail}`);
    const size = (await d?.docker(['image', 'inspect', '--format', '{{.Size}}', tag]))?.stdout.trim();
    t.diagnostic(`image built in ${Math.round((Date.now() - started) / 1000)} s, ${size} bytes`);
    built = true;
  });

  it('serves over HTTP with the token it made; a fork carries Python state', {
    timeout: 20 * MIN,
  }, async (t) => {
    assert.ok(built, 'the image was not built');
    const started = Date.now();
    const port = new URL(base).port;
    const run = (access: readonly string[]) =>
      d?.docker(
        ['run', '-d', '--name', name, ...access, '-p', `127.0.0.1:${port}:7777`].concat([
          '-v',
          `${stateDir}:/var/lib/forkbox`,
          ...seedMount,
          tag,
        ]),
        { allowFail: true },
      );
    let r = await run(['--privileged']);
    if (r?.code !== 0 && /unable to apply caps/.test(r?.stderr ?? '')) {
      // This host's root lacks a capability in its bounding set (CAP_SYS_RESOURCE on the CI machines),
      // and Docker 20.10's --privileged asks for every capability it knows: docs/CONTAINER.md's
      // explicit set instead, without that one.
      const lacking = missingCapabilities();
      t.diagnostic(`--privileged refused (the bounding set lacks ${lacking.join(', ')}): the explicit set`);
      await d?.docker(['rm', '-f', name], { allowFail: true });
      r = await run(explicitAccess(lacking));
    }
    assert.equal(r?.code, 0, `docker run failed:\n${r?.stderr}`);
    await waitFor(healthy, { what: 'the container answers /healthz', timeoutMs: 2 * MIN, intervalMs: 500 });
    token = readFileSync(join(stateDir, 'tokens'), 'utf8').split(/\s+/)[0] ?? '';
    assert.match(token, /^[0-9a-f]{64}$/, 'the entrypoint made a token file in the state volume');
    assert.equal((await fetch(`${base}/v1/sandboxes`)).status, 401, 'no token: 401');
    await waitFor(async () => (await containerLog()).includes('the default image is ready'), {
      what: 'the entrypoint has the default image ready (seeded: found up to date)',
      timeoutMs: 15 * MIN,
      intervalMs: 2000,
    }).catch(async (e: unknown) => {
      throw new Error(`${String(e)}\n${(await containerLog()).slice(-6000)}`);
    });
    t.diagnostic(`start to the default image ready: ${Math.round((Date.now() - started) / 1000)} s`);
    const images = await call('GET', '/v1/images');
    assert.ok(
      (images.json as unknown as { name: string }[]).some((i) => i.name === 'debian'),
      images.text,
    );

    const c = await call('POST', '/v1/sandboxes', { name: 'box' });
    assert.equal(c.status, 201, c.text);
    assert.equal((await code('box', 'import os; x = 6 * 7')).ok, true);
    const e = await call('POST', '/v1/sandboxes/box/exec', {
      argv: ['sh', '-c', 'echo kept > /root/kept.txt'],
    });
    assert.equal(e.status, 200, e.text);
    const f = await call('POST', '/v1/sandboxes/box/fork', { n: 1 });
    assert.equal(f.status, 201, f.text);
    const child = (f.json.children as { sandbox: { id: string } }[])[0]?.sandbox.id ?? '';
    assert.equal((await code(child, 'x')).value, '42', 'the child has the source REPL variable');
    const s = await call('POST', '/v1/sandboxes/box/snapshots', { name: 'keep' });
    assert.equal(s.status, 201, s.text);
  });

  it('a daemon killed inside the container is started again and re-adopts the sandboxes', {
    timeout: 5 * MIN,
  }, async () => {
    const pid = readFileSync(join(stateDir, 'lock.pid'), 'utf8').trim();
    await d?.docker(['exec', name, 'kill', '-KILL', pid]);
    await waitFor(
      () => {
        const now = readFileSync(join(stateDir, 'lock.pid'), 'utf8').trim();
        return now !== pid && healthy();
      },
      { what: 'a new daemon answers', timeoutMs: 2 * MIN, intervalMs: 500 },
    );
    const r = await code('box', 'x + 1');
    assert.equal(r.value, '43', 'the REPL state survived the daemon');
    assert.equal(r.restarted, false);
  });

  it('a container restart: sandboxes start again on their files (fresh processes); snapshots and images stay', {
    timeout: 10 * MIN,
  }, async () => {
    await d?.docker(['restart', '-t', '30', name], { timeoutMs: 2 * MIN });
    await waitFor(healthy, { what: 'the restarted container answers', timeoutMs: 3 * MIN, intervalMs: 500 });
    const list = await call('GET', '/v1/sandboxes');
    assert.equal(list.status, 200, list.text);
    const rows = list.json as unknown as {
      id: string;
      name: string | null;
      state: string;
      labels: Record<string, string>;
    }[];
    // Every process died with the container; recovery starts each sandbox again on its kept files.
    const revived = rows.filter((r) => r.state === 'running' && r.labels['forkbox.restarted'] !== undefined);
    assert.ok(
      revived.some((r) => r.name === 'box'),
      list.text,
    );
    assert.ok(revived.length >= 2, `the fork child runs again too: ${list.text}`);
    const kept = await call('POST', '/v1/sandboxes/box/exec', { argv: ['cat', '/root/kept.txt'] });
    assert.equal(kept.json.stdout, 'kept\n', kept.text);
    assert.equal((await code('box', 'x')).error?.type, 'NameError', 'Python state ended with the container');
    assert.equal((await code('box', 'z = 5')).ok, true);
    const f = await call('POST', '/v1/sandboxes/box/fork', { n: 1 });
    assert.equal(f.status, 201, f.text);
    const forked = (f.json.children as { sandbox: { id: string } }[])[0]?.sandbox.id ?? '';
    assert.equal((await code(forked, 'z')).value, '5', 'a revived sandbox forks with its new state');
    const images = await call('GET', '/v1/images');
    assert.ok((images.json as unknown as { name: string }[]).some((i) => i.name === 'debian'));

    const snap = await call('GET', '/v1/snapshots/keep');
    assert.equal(snap.status, 200, snap.text);
    assert.equal(snap.json.pythonState, false, 'its live REPL copy ended with the container');
    const restored = await call('POST', '/v1/snapshots/keep/restore', { n: 1 });
    assert.equal(restored.status, 201, restored.text);
    const id = (restored.json.children as { sandbox: { id: string } }[])[0]?.sandbox.id ?? '';
    const cat = await call('POST', `/v1/sandboxes/${id}/exec`, { argv: ['cat', '/root/kept.txt'] });
    assert.equal(cat.json.stdout, 'kept\n', cat.text);
    assert.equal((await code(id, 'x')).error?.type, 'NameError', 'a fresh REPL');

    for (const sb of [id, forked, 'box'])
      assert.equal((await call('DELETE', `/v1/sandboxes/${sb}`)).status, 200);
    assert.equal((await call('DELETE', '/v1/snapshots/keep')).status, 200);
    await d?.docker(['stop', '-t', '30', name], { timeoutMs: 2 * MIN });
    assert.ok(existsSync(join(stateDir, 'forkbox.db')));
    assert.ok((await stateLoops(stateDir)).length <= 1, 'at most one loop device for the btrfs volume');
  });
});
