/**
 * A real registry for image tests: Debian's `docker-registry` (distribution) on 127.0.0.1:<free port>
 * with temp storage, filled through the registry API by the test, behind a counting proxy that can also
 * alter a blob in flight (for digest-mismatch tests). Layers are tar archives built with GNU tar.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  createReadStream,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { waitFor } from './cli.ts';

export interface Blob {
  digest: string;
  size: number;
  mediaType: string;
}

export interface TestRegistry {
  /** `127.0.0.1:<port>` of the counting proxy: what references name. */
  host: string;
  /** `127.0.0.1:<port>` of the registry itself, past the proxy (benchmarks: no relay in this process). */
  upstream: string;
  /** Blob GETs that reached the proxy, by digest. */
  blobGets: Map<string, number>;
  /** Flip a byte of this blob's body as it passes the proxy. */
  corrupt: Set<string>;
  pushBlob(repo: string, file: string, mediaType: string): Promise<Blob>;
  pushJson(repo: string, body: unknown, mediaType: string): Promise<Blob>;
  pushManifest(repo: string, tag: string, body: unknown, mediaType: string): Promise<string>;
  stop(): Promise<void>;
}

export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
export const OCI_CONFIG = 'application/vnd.oci.image.config.v1+json';
export const LAYER_GZ = 'application/vnd.oci.image.layer.v1.tar+gzip';
export const LAYER_TAR = 'application/vnd.oci.image.layer.v1.tar';

async function listenFree(server: http.Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

async function freePort(): Promise<number> {
  const s = http.createServer();
  const port = await listenFree(s);
  await new Promise((r) => s.close(r));
  return port;
}

/** Registry credentials: with them, the registry requires HTTP Basic auth (an htpasswd file, bcrypt). */
export interface RegistryAuth {
  username: string;
  password: string;
}

function htpasswdSection(dir: string, auth: RegistryAuth | undefined): string {
  if (!auth) return '';
  const file = join(dir, 'htpasswd');
  const r = spawnSync('htpasswd', ['-Bbn', auth.username, auth.password], { encoding: 'utf8' });
  assert.equal(r.status, 0, `htpasswd (apache2-utils, installed by scripts/setup.sh): ${r.stderr}`);
  writeFileSync(file, r.stdout);
  return `auth:\n  htpasswd:\n    realm: forkbox-test\n    path: ${file}\n`;
}

export async function startRegistry(dir: string, auth?: RegistryAuth): Promise<TestRegistry> {
  const port = await freePort();
  mkdirSync(join(dir, 'storage'), { recursive: true });
  const cfg = join(dir, 'config.yml');
  writeFileSync(
    cfg,
    `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, 'storage')}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:${port}\n${htpasswdSection(dir, auth)}`,
  );
  // The test's own requests (pushes, the readiness probe) carry the credentials; the proxy passes
  // the daemon's requests on as they are.
  const authz: Record<string, string> = auth
    ? { authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` }
    : {};
  const child: ChildProcess = spawn('docker-registry', ['serve', cfg], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr?.on('data', (d: Buffer) => {
    log = (log + d.toString()).slice(-8000);
  });
  const upstream = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      assert.equal(child.exitCode, null, `docker-registry exited: ${log}`);
      const ok = await fetch(`${upstream}/v2/`, { headers: authz }).then(
        (r) => r.status === 200,
        () => false,
      );
      return ok ? true : undefined;
    },
    'the registry to answer',
    30_000,
  );

  const blobGets = new Map<string, number>();
  const corrupt = new Set<string>();
  const proxy = http.createServer((req, res) => {
    const m = /\/blobs\/(sha256:[a-f0-9]{64})$/.exec(req.url ?? '');
    const digest = m?.[1];
    if (digest && req.method === 'GET') blobGets.set(digest, (blobGets.get(digest) ?? 0) + 1);
    const up = http.request(`${upstream}${req.url}`, { method: req.method, headers: req.headers }, (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      let first = true;
      ur.on('data', (c: Buffer) => {
        if (first && digest && corrupt.has(digest)) c[0] = (c[0] ?? 0) ^ 0xff;
        first = false;
        res.write(c);
      });
      ur.on('end', () => res.end());
    });
    req.pipe(up);
  });
  const proxyPort = await listenFree(proxy);

  async function upload(repo: string, body: Buffer | string, digest: string, size: number): Promise<void> {
    const start = await fetch(`${upstream}/v2/${repo}/blobs/uploads/`, { method: 'POST', headers: authz });
    assert.equal(start.status, 202, `upload start: ${await start.text()}`);
    const loc = new URL(start.headers.get('location') ?? '', upstream);
    loc.searchParams.set('digest', digest);
    const put = await new Promise<number>((resolve, reject) => {
      const r = http.request(loc, {
        method: 'PUT',
        headers: { ...authz, 'content-length': String(size), 'content-type': 'application/octet-stream' },
      });
      r.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      r.on('error', reject);
      if (typeof body === 'string') createReadStream(body).pipe(r);
      else r.end(body);
    });
    assert.equal(put, 201, `blob upload of ${digest}`);
  }

  return {
    host: `127.0.0.1:${proxyPort}`,
    upstream: `127.0.0.1:${port}`,
    blobGets,
    corrupt,
    async pushBlob(repo, file, mediaType) {
      const h = createHash('sha256');
      for await (const c of createReadStream(file)) h.update(c as Buffer);
      const digest = `sha256:${h.digest('hex')}`;
      const size = statSync(file).size;
      await upload(repo, file, digest, size);
      return { digest, size, mediaType };
    },
    async pushJson(repo, body, mediaType) {
      const bytes = Buffer.from(JSON.stringify(body));
      const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
      await upload(repo, bytes, digest, bytes.length);
      return { digest, size: bytes.length, mediaType };
    },
    async pushManifest(repo, tag, body, mediaType) {
      const bytes = Buffer.from(JSON.stringify(body));
      const r = await fetch(`${upstream}/v2/${repo}/manifests/${tag}`, {
        method: 'PUT',
        headers: { ...authz, 'content-type': mediaType },
        body: bytes,
      });
      assert.equal(r.status, 201, `manifest ${repo}:${tag}: ${await r.text()}`);
      return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    },
    async stop() {
      await new Promise((r) => proxy.close(r));
      proxy.closeAllConnections();
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/** A layer tar(.gz) of `files` (path → content; a path ending in '/' is a directory), owned by root. */
export function makeLayer(work: string, files: Record<string, string>, gzip = true): string {
  const root = mkdtempSync(join(work, 'layer-'));
  for (const [p, content] of Object.entries(files)) {
    if (p.endsWith('/')) mkdirSync(join(root, p), { recursive: true });
    else {
      mkdirSync(join(root, p, '..'), { recursive: true });
      writeFileSync(join(root, p), content);
    }
  }
  const out = `${root}.tar${gzip ? '.gz' : ''}`;
  const r = spawnSync('tar', [
    gzip ? '-czf' : '-cf',
    out,
    '-C',
    root,
    '--numeric-owner',
    '--owner=0',
    '--group=0',
    '.',
  ]);
  assert.equal(r.status, 0, String(r.stderr));
  rmSync(root, { recursive: true, force: true });
  return out;
}

/**
 * The default image's optional bulk (the data stack, Node.js, the compiler numpy pulls in, perl, docs
 * and locales: ~1 GiB of its 1.3) is left out of the base layers the pull tests push, which need a Debian
 * with python3: every push, download, digest check and extraction then moves a quarter of it.
 */
const BULK = [
  './usr/lib/python3/dist-packages',
  './usr/lib/gcc',
  './usr/libexec/gcc',
  './usr/include',
  './usr/share/doc',
  './usr/share/locale',
  './usr/share/man',
  './usr/share/nodejs',
  './usr/share/matplotlib',
  './usr/lib/x86_64-linux-gnu/openblas-pthread',
  './usr/lib/x86_64-linux-gnu/libnode.so*',
  './usr/lib/x86_64-linux-gnu/libicudata.so*',
  './usr/lib/x86_64-linux-gnu/lib*san.so*',
  './usr/lib/x86_64-linux-gnu/perl',
  './usr/share/perl',
  './usr/share/unicode',
];

/**
 * An uncompressed tar of an existing (uid-shifted) layer directory, with every owner set back to root, and
 * without the default image's optional bulk (BULK).
 */
export function tarLayerDir(work: string, layerDir: string): string {
  const out = join(work, `base-${createHash('sha256').update(layerDir).digest('hex').slice(0, 8)}.tar`);
  const excludes = BULK.map((p) => `--exclude=${p}`);
  const r = spawnSync('tar', [
    '-cf',
    out,
    ...excludes,
    '-C',
    layerDir,
    '--numeric-owner',
    '--owner=0',
    '--group=0',
    '.',
  ]);
  assert.equal(r.status, 0, String(r.stderr));
  return out;
}

/** Push a config and a manifest for `layers` (bottom first) as repo:tag; returns the manifest's digest. */
export async function pushImage(
  reg: TestRegistry,
  repo: string,
  tag: string,
  layers: Blob[],
  config: Record<string, unknown> = {},
  arch = 'amd64',
): Promise<{ digest: string; size: number }> {
  const cfg = await reg.pushJson(
    repo,
    { architecture: arch, os: 'linux', config, rootfs: { type: 'layers', diff_ids: [] } },
    OCI_CONFIG,
  );
  const manifest = { schemaVersion: 2, mediaType: OCI_MANIFEST, config: cfg, layers };
  const digest = await reg.pushManifest(repo, tag, manifest, OCI_MANIFEST);
  return { digest, size: Buffer.byteLength(JSON.stringify(manifest)) };
}

export function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}
