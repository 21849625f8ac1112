/**
 * What the CLI loads (issue: `forkbox run -- true` used to import ~440 files before doing anything). Runs
 * the CLI in a child Node process with bench/lib/module-trace.mjs recording every module file it loads,
 * and checks that `forkbox --version` loads no command and none of the heavy parts, and that
 * `forkbox run -- true` loads its own command and the daemon client only — never the engine, the
 * runtimes, the MCP server, the REST/HTTP apps and their schemas, pino, SQLite or FFI. The daemon for
 * `run` is a stand-in on a Unix socket that answers /healthz and refuses the rest (what is loaded does
 * not depend on the answers). The timings are in bench/cli-startup.ts.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TRACE = join(ROOT, 'bench/lib/module-trace.mjs');
const MAIN = join(ROOT, 'src/cli/main.ts');

/** Packages no light command may load. */
const HEAVY_PACKAGES = [
  'pino',
  'hono',
  '@hono',
  'zod',
  '@asteasolutions',
  '@modelcontextprotocol',
  'prom-client',
  'better-sqlite3',
  'koffi',
  'cli-progress',
  'tar',
  '@opentelemetry',
];
/** Parts of src/ no light command may load (the engine and everything behind it, the servers). */
const HEAVY_SRC = [
  /^service\//,
  /^runtimes\//,
  /^storage\//,
  /^images\//,
  /^composition\.ts$/,
  /^protocol\/(?!rest\/(errors|wire)\.ts$)/,
];

interface Loaded {
  code: number | null;
  stderr: string;
  src: string[];
  packages: string[];
}

/** Run `forkbox args` from the sources (through tsx) and return the module files it loaded. */
function traced(args: string[], env: NodeJS.ProcessEnv): Promise<Loaded> {
  const dir = mkdtempSync(join(tmpdir(), 'fbx-trace-'));
  const file = join(dir, 'modules');
  const script = `const { main } = await import(${JSON.stringify(MAIN)}); process.exitCode = await main(['node', 'forkbox', ...${JSON.stringify(args)}]);`;
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--import', TRACE, '--input-type=module', '-e', script],
      {
        cwd: ROOT,
        env: { ...process.env, ...env, FORKBOX_MODULE_TRACE: file },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      try {
        const lines = [
          ...new Set(
            readFileSync(file, 'utf8')
              .split('\n')
              .filter((l) => l !== ''),
          ),
        ];
        const src = lines
          .filter((l) => l.startsWith(join(ROOT, 'src/')))
          .map((l) => relative(join(ROOT, 'src'), l));
        const packages = [
          ...new Set(
            lines
              .map((l) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(l)?.[1])
              .filter((p): p is string => p !== undefined),
          ),
        ];
        resolve({ code, stderr, src: src.sort(), packages: packages.sort() });
      } catch (e) {
        reject(e);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

function assertLight(l: Loaded, what: string): void {
  const heavyPkgs = l.packages.filter((p) => HEAVY_PACKAGES.some((h) => p === h || p.startsWith(`${h}/`)));
  assert.deepEqual(heavyPkgs, [], `${what} loads no heavy package (loaded: ${l.packages.join(', ')})`);
  const heavySrc = l.src.filter((f) => HEAVY_SRC.some((re) => re.test(f)));
  assert.deepEqual(heavySrc, [], `${what} loads nothing of the engine or the servers`);
}

describe('cli lazy loading', () => {
  let dir: string;
  let server: Server;
  const paths: string[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fbx-lazy-'));
    server = createServer((req, res) => {
      paths.push(`${req.method} ${req.url}`);
      req.resume();
      if (req.url === '/healthz') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
        return;
      }
      res
        .writeHead(503, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { code: 'unavailable', message: 'stand-in daemon' } }));
    });
    await new Promise<void>((r) => server.listen(join(dir, 'forkbox.sock'), r));
  });
  after(async () => {
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('forkbox --version loads no command', async () => {
    const l = await traced(['--version'], {});
    assert.equal(l.code, 0, l.stderr);
    assertLight(l, '--version');
    assert.deepEqual(
      l.src.filter((f) => f.startsWith('cli/commands/') || f.startsWith('transports/')),
      [],
      'no command module and no daemon client',
    );
    assert.deepEqual(
      l.packages.filter(
        (p) => p !== 'tsx' && p !== 'esbuild' && p !== 'get-tsconfig' && p !== 'resolve-pkg-maps',
      ),
      ['commander'],
    );
  });

  it('forkbox run -- true loads run and the daemon client only', async () => {
    const l = await traced(['--state-dir', dir, 'run', '--', 'true'], { FORKBOX_URL: '' });
    // The stand-in refuses the create: the command failed as the daemon said, after loading its path.
    assert.equal(l.code, 7, l.stderr);
    assert.match(l.stderr, /stand-in daemon/);
    assert.ok(paths.includes('POST /v1/sandboxes'), `the CLI reached the daemon (${paths.join(', ')})`);
    assertLight(l, 'run');
    assert.deepEqual(
      l.src.filter((f) => f.startsWith('cli/commands/')),
      ['cli/commands/limit-options.ts', 'cli/commands/run.ts'],
    );
    assert.ok(l.src.includes('transports/daemon-client.ts'), 'the daemon client is loaded');
  });
});
