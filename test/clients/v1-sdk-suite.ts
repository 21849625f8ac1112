/**
 * The v1 TypeScript SDK (`@modelcontextprotocol/sdk` 1.x, what most MCP clients embed) against a real
 * `forkbox serve`, over stdio (`forkbox mcp`, a client of that daemon) and over Streamable HTTP. For each
 * transport: list tools, run a command and Python code, a 100 MiB output (the session and the sandbox's
 * REPL state live on, the cut part readable in its file), a cancel (the command's processes are gone), and
 * a silent 90-second command that outlives the client's 60 s timeout thanks to progress notifications.
 *
 * The suite itself; v1-sdk-stdio.test.ts and v1-sdk-http.test.ts run it, as two files so that their
 * 90-second calls run side by side.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { until } from '../helpers/exec-probe.ts';
import { type TextResult, textFields } from '../helpers/mcp-result.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';

const skip = nativeUnavailable();

type SC = Record<string, unknown>;

const waitFor = (what: string, check: () => Promise<boolean>, ms = 30_000) => until(what, check, ms);

export function suite(
  kind: 'stdio' | 'http',
  makeTransport: (d: ServedDaemon, stateDir: string) => Transport,
) {
  describe(`v1 SDK over ${kind}`, { skip: skip ?? false }, () => {
    let stateDir: string;
    let daemon: ServedDaemon | undefined;
    let client: Client;
    const errors: Error[] = [];

    const call = async (name: string, args: SC, opts: Parameters<Client['callTool']>[2] = {}) =>
      (await client.callTool({ name, arguments: args }, CallToolResultSchema, opts)) as TextResult;
    const ok = async (name: string, args: SC, opts: Parameters<Client['callTool']>[2] = {}) => {
      const r = await call(name, args, opts);
      assert.notEqual(r.isError, true, `${name}: ${JSON.stringify(r.content).slice(0, 2000)}`);
      return textFields(r);
    };

    before(async () => {
      stateDir = makeStateDir();
      daemon = await startServe(stateDir);
      client = new Client({ name: `forkbox-clients-${kind}`, version: '1' });
      client.onerror = (e) => errors.push(e);
      await client.connect(makeTransport(daemon, stateDir));
    });
    after(async () => {
      await client?.close().catch(() => undefined);
      await stopServeAndClean(daemon?.child, stateDir);
    });

    it('lists the tools, runs a command and Python code', async () => {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'exec_run') && tools.some((t) => t.name === 'code_run'));
      assert.equal((await ok('exec_run', { command: 'echo hi' })).stdout, 'hi\n');
      assert.equal((await ok('code_run', { code: 'keep = 6 * 7\nkeep' })).value, '42');
    });

    it('a 100 MiB output: bounded result, session and REPL state live on, the cut part readable', async () => {
      const r = await ok('exec_run', {
        command: 'head -c 104857600 /dev/zero | tr "\\0" x; echo END',
        timeout_s: 600,
      });
      assert.equal(r.exit_code, 0);
      assert.equal(r.truncated, true);
      const stdout = r.stdout as string;
      assert.ok(stdout.length < 1024 * 1024, `inline output is bounded (${stdout.length} chars)`);
      assert.ok(stdout.endsWith('xEND\n'), 'the tail is kept');
      const s = (r.streams as { stdout: { total_bytes: number; file: string | null; spooled_bytes: number } })
        .stdout;
      assert.equal(s.total_bytes, 104857600 + 4);
      assert.ok(s.file, 'the cut part is in a file');
      // What the marker promises is what the file holds: here the whole stream, every byte at its offset.
      assert.match(stdout, new RegExp(`the whole stdout is in ${s.file.replace(/\./g, '\\.')} inside`));
      assert.equal(s.spooled_bytes, s.total_bytes, 'the whole stream is in the file');
      const page = await ok('file_read', { path: s.file, offset: s.total_bytes - 4096, length: 4096 });
      assert.equal(page.content, `${'x'.repeat(4092)}END\n`, 'the last bytes are readable at their offset');
      const mid = await ok('file_read', { path: s.file, offset: 50 * 1024 * 1024, length: 16 });
      assert.equal(mid.content, 'x'.repeat(16), 'the cut middle is readable by offset');
      assert.equal((await ok('code_run', { code: 'keep' })).value, '42', 'the REPL state is still there');
      assert.deepEqual(errors, [], 'the connection had no error');
    });

    it('a cancel stops the command: its processes are gone', async () => {
      const ac = new AbortController();
      const p = call(
        'exec_run',
        { command: 'echo started; exec sleep 4242' },
        { signal: ac.signal, onprogress: () => ac.abort() },
      );
      await assert.rejects(p);
      await waitFor('sleep 4242 to end', async () => {
        const ps = await ok('exec_run', { command: 'ps -eo args' });
        return !(ps.stdout as string).includes('sleep 4242');
      });
      assert.equal((await ok('code_run', { code: 'keep' })).value, '42');
    });

    it('a silent 90 s command outlives the 60 s client timeout with progress', async () => {
      let progress = 0;
      const r = await ok(
        'exec_run',
        { command: 'sleep 90; echo done' },
        { timeout: 60_000, resetTimeoutOnProgress: true, onprogress: () => progress++ },
      );
      assert.equal(r.stdout, 'done\n');
      assert.ok(progress >= 9, `progress at least every 10 s while silent (got ${progress})`);
    });
  });
}
