/**
 * Attack: flood the Node.js REPL's output (`code_run` language node). A loop of `console.log` of a 1 MiB
 * string, from the persistent Node process, must not grow the agent, the daemon or Node itself without
 * bound, nor cost the REPL its state. Precedent: the Python REPL's print loop that took the agent and the
 * daemon's memory (test/abuse/repl-output-flood.test.ts), Docker's json-file log driver that kept every
 * byte a container printed until `max-size`, and Node's own pitfall: what a pipe cannot take at once
 * waits in Node's memory (console.log ignores backpressure); the first run of this test had the Node
 * process killed by the OOM killer at 512 MB. The driver makes its stdout and stderr writes blocking, so a
 * full pipe holds the writer, as it holds a Python print.
 *
 * Holds when: 2 GiB printed by one Node cell ends with the sandbox alive, the Node REPL usable with its
 * state, the result a bounded head and tail saying how much was left out, and the daemon's (this
 * process's), the agent's and the Node process's RSS growth under fixed bounds.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import { initOf, sandboxPids } from '../helpers/sandbox-procs.ts';

const why = nativeUnavailable();
const MIB = 1024 * 1024;
const GIB = 1024 * MIB;
const DAEMON_GROWTH_BOUND = 96 * MIB;
const AGENT_GROWTH_BOUND = 32 * MIB;
/** Node holds the 1 MiB line, and what it writes waits in the pipe, not in its heap. */
const NODE_GROWTH_BOUND = 64 * MIB;

function rssOf(pid: number): number {
  return (
    Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN) * 1024
  );
}

function nodePid(id: string): number {
  const pid = sandboxPids(id).find((p) =>
    readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('replnode.cjs'),
  );
  if (pid === undefined) throw new Error(`no Node REPL process in ${id}`);
  return pid;
}

describe('abuse: a 2 GiB console.log loop in the Node REPL', { skip: why ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
  });
  after(async () => {
    await fx?.close();
  });

  it('keeps the sandbox, the Node REPL state and every process’s memory bounded', async (t) => {
    const id = (await api.createSandbox({ name: 'node-flood', memoryMb: 512 })).id;
    const node = (code: string) => api.runCode(id, { language: 'node', code, timeoutSeconds: 1800 });
    const setUp = await node('const kept = "before the flood"; const line = "x".repeat(1024 * 1024 - 1)');
    assert.equal(setUp.ok, true, JSON.stringify(setUp));
    const agentPid = initOf(sandboxPids(id));
    const nodeProc = nodePid(id);
    const agent0 = rssOf(agentPid);
    const node0 = rssOf(nodeProc);
    const rss0 = process.memoryUsage().rss;
    let peak = rss0;
    let nodePeak = node0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
      nodePeak = Math.max(nodePeak, rssOf(nodeProc));
    }, 50);
    const t0 = performance.now();
    const r = await node('for (let i = 0; i < 2048; i++) console.log(line);\nconsole.log("END")').finally(
      () => clearInterval(sampler),
    );
    const seconds = (performance.now() - t0) / 1000;
    assert.equal(
      r.ok,
      true,
      JSON.stringify({ ...r, stdout: r.stdout.length, stderr: r.stderr.slice(-2000) }),
    );
    assert.equal(r.streams?.stdout.totalBytes, 2 * GIB + 4);
    assert.equal(r.truncated, true);
    assert.ok((r.streams?.stdout.shownBytes ?? Infinity) <= MIB, `shown ${r.streams?.stdout.shownBytes}`);
    assert.ok(r.stdout.length <= MIB + 512, `inline stdout of ${r.stdout.length} bytes`);
    assert.ok(r.stdout.endsWith('x\nEND\n'));
    assert.match(r.stdout, /bytes of stdout omitted here/);
    const growth = peak - rss0;
    const nodeGrowth = nodePeak - node0;
    const line = `2 GiB through the Node REPL in ${seconds.toFixed(1)} s (${(2048 / seconds).toFixed(0)} MiB/s); daemon RSS growth ${(growth / MIB).toFixed(1)} MiB, Node's ${(nodeGrowth / MIB).toFixed(1)} MiB at peak`;
    t.diagnostic(line);
    process.stderr.write(`[node-repl-output-flood] ${line}\n`);
    assert.ok(growth < DAEMON_GROWTH_BOUND, line);
    assert.ok(nodeGrowth < NODE_GROWTH_BOUND, line);
    const agentGrowth = rssOf(agentPid) - agent0;
    assert.ok(agentGrowth < AGENT_GROWTH_BOUND, `the agent grew by ${(agentGrowth / MIB).toFixed(1)} MiB`);
    const after = await node('kept');
    assert.equal(after.value, "'before the flood'");
    assert.equal(after.restarted, false);
    assert.equal((await api.getSandbox(id)).state, 'running');
  });
});
