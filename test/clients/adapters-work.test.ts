/**
 * Ordinary agent work through each third-party adapter (issue #12), against one real `forkbox serve`:
 * the OpenAI Agents SDK (strict), Google GenAI, the Vercel AI SDK, LangChain's MCP adapters, mcp-remote.
 * For each:
 * - a 100 MiB output: the result the framework hands the model stays bounded, the session and its
 *   sandbox (REPL state included) live on, and the cut part — past the old 64 MiB spool cap — reads
 *   back at its offset through the same client;
 * - a cancel with the client's own mechanism (an AbortSignal; GenAI has none, so closing its MCP
 *   client): the command's process tree, a setsid child included, ends;
 * - a silent 90 s command, all clients at once (one test, for CI time): what each client does with it
 *   by default — and with its documented setting where the default fails (docs/MCP-CLIENTS.md).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { nativeUnavailable } from '../helpers/native.ts';
import { servedSuite } from '../helpers/served-suite.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  type AdapterClient,
  googleGenai,
  langchain,
  mcpRemote,
  openaiAgents,
  vercelAi,
} from './adapter-clients.ts';

const skip = nativeUnavailable();
const TOTAL = 100 * 1024 * 1024 + 4; // 100 MiB of x, then END\n
const FACTORIES: [string, (url: string) => Promise<AdapterClient>][] = [
  ['openai', (u) => openaiAgents(u)],
  ['genai', (u) => googleGenai(u)],
  ['vercel', vercelAi],
  ['langchain', (u) => langchain(u)],
  ['mcp-remote', mcpRemote],
];

/** Host pids of processes whose command line is exactly `sleep <n>` (in any sandbox: pids are visible). */
function sleepers(n: number): number[] {
  const out: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readFileSync(`/proc/${p}/cmdline`, 'utf8') === `sleep\0${n}\0`) out.push(Number(p));
    } catch {
      // ended while we looked
    }
  }
  return out;
}

describe('third-party adapters: big output, cancel, long silent work', { skip: skip ?? false }, () => {
  const served = servedSuite();

  for (const [key, open] of FACTORIES) {
    it(`${key}: a 100 MiB output is bounded, the session and sandbox live on, the cut part reads back`, async () => {
      const c = await open(served.mcpUrl);
      try {
        await c.call('code_run', { code: 'keep = 6 * 7' });
        const big = await c.call('exec_run', {
          command: 'head -c 104857600 /dev/zero | tr "\\0" x; echo END',
          timeout_s: 600,
        });
        assert.ok(
          big.length < 1024 * 1024,
          `${c.name}: what the model gets is bounded (${big.length} chars)`,
        );
        assert.match(big, /xEND\\n/, 'the tail is in it');
        const file = /the whole stdout is in (\S+) inside the sandbox/.exec(big)?.[1];
        assert.ok(file, `the result says the whole stdout is in a file: ${big.slice(0, 600)}`);
        // Past the old 64 MiB cap, and the very end: exactly the bytes at those offsets.
        const mid = await c.call('file_read', { path: file, offset: 80 * 1024 * 1024, length: 8 });
        assert.match(mid, /"x{8}"|\\"x{8}\\"/, `${c.name}: 8 x at 80 MiB: ${mid.slice(0, 300)}`);
        const end = await c.call('file_read', { path: file, offset: TOTAL - 6, length: 6 });
        assert.match(end, /xxEND\\n/, `${c.name}: the last bytes at their offset: ${end.slice(0, 300)}`);
        assert.match(await c.call('code_run', { code: 'keep' }), /42/, 'the REPL state is still there');
      } finally {
        await c.close();
      }
    });
  }

  FACTORIES.forEach(([key, open], i) => {
    it(`${key}: a cancel with the client's own mechanism ends the command's process tree`, async () => {
      const n = 4300 + i;
      const c = await open(served.mcpUrl);
      const ac = new AbortController();
      let closed = false;
      try {
        const call = c
          .call(
            'exec_run',
            { command: `setsid sleep ${n} & sleep ${n}` },
            key === 'genai' ? {} : { signal: ac.signal },
          )
          .then(
            () => 'answered',
            () => 'failed',
          );
        await waitFor(() => sleepers(n).length === 2, { what: `both sleep ${n} run`, timeoutMs: 60_000 });
        if (key === 'genai') {
          // mcpToTool's callTool takes no signal: the only way out is closing its MCP client.
          await c.close();
          closed = true;
        } else ac.abort();
        assert.equal(await call, 'failed', 'the call ends without an answer');
        await waitFor(() => sleepers(n).length === 0, {
          what: `no sleep ${n} left (the setsid child included)`,
          timeoutMs: 30_000,
        });
        if (!closed) assert.match(await c.call('exec_run', { command: 'echo after' }), /after/);
      } finally {
        if (!closed) await c.close();
      }
    });
  });
  it('a silent 90 s command, every client at once: what each does by default, and with its setting', async () => {
    const settle = (p: Promise<string>) =>
      p.then(
        (text) => ({ ok: true, text }),
        (e: unknown) => ({ ok: false, text: e instanceof Error ? e.message : String(e) }),
      );
    const run = async (c: AdapterClient, tag: string, opts: { onProgress?: () => void } = {}) => {
      try {
        return await settle(c.call('exec_run', { command: `sleep 90; echo done-${tag}` }, opts));
      } finally {
        await c.close();
      }
    };
    const url = served.mcpUrl;
    const progress = { langchainDefault: 0, langchain: 0, mcpRemote: 0 };
    const long = { timeoutMs: 120_000 };
    const [openaiDefault, openaiLong, genaiDefault, genaiLong, vercel, lcDefault, lcLong, remote] =
      await Promise.all([
        openaiAgents(url).then((c) => run(c, 'openai-default')),
        openaiAgents(url, long).then((c) => run(c, 'openai-long')),
        googleGenai(url).then((c) => run(c, 'genai-default')),
        googleGenai(url, long).then((c) => run(c, 'genai-long')),
        vercelAi(url).then((c) => run(c, 'vercel')),
        langchain(url, { onProgress: () => progress.langchainDefault++ }).then((c) => run(c, 'lc-default')),
        langchain(url, { ...long, onProgress: () => progress.langchain++ }).then((c) => run(c, 'lc-long')),
        mcpRemote(url).then((c) => run(c, 'remote', { onProgress: () => progress.mcpRemote++ })),
      ]);
    const seen = JSON.stringify({ openaiDefault, genaiDefault, lcDefault, progress });
    // No progress hook and a 60 s timeout: the default fails; its `timeout` setting makes it wait.
    assert.doesNotMatch(openaiDefault.text, /done-openai-default/, seen);
    assert.match(openaiDefault.text, /timed out/i, seen);
    assert.match(openaiLong.text, /done-openai-long/);
    assert.equal(genaiDefault.ok, false, seen);
    assert.match(genaiDefault.text, /timed out/i, seen);
    assert.match(genaiLong.text, /done-genai-long/);
    // No timeout on tool calls at all.
    assert.match(vercel.text, /done-vercel/);
    // Progress arrives, but LangChain does not let it reset the SDK's 60 s timer.
    assert.equal(lcDefault.ok, false, seen);
    assert.match(lcDefault.text, /timed out/i, seen);
    assert.ok(progress.langchainDefault > 0, seen);
    assert.match(lcLong.text, /done-lc-long/);
    assert.ok(progress.langchain >= 9, `LangChain: progress at least every 10 s (got ${progress.langchain})`);
    // The v1 SDK through mcp-remote: progress resets its 60 s timer.
    assert.match(remote.text, /done-remote/);
    assert.ok(
      progress.mcpRemote >= 9,
      `mcp-remote: progress at least every 10 s (got ${progress.mcpRemote})`,
    );
  });
});
