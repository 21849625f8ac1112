/**
 * Attack: flood the REPL's output (issue #11 item 4). `while True: print(...)` in the REPL grew the agent's
 * capture buffer until the OOM killer took the agent, and the daemon's RSS reached 1.93 GB on an output
 * flood. Precedent: Docker's json-file log driver, which kept every byte a container printed until
 * `max-size` was added, and Jupyter's "IOPub data rate exceeded" limit, added because a printing loop could
 * take the notebook server down.
 *
 * Holds when: 10 GiB printed by one REPL call ends with the sandbox alive, the REPL usable with its state,
 * the result a bounded head and tail saying how much was left out and where the rest (up to the spool cap)
 * is, and both the agent's and the daemon's (this process's) RSS growth under fixed bounds.
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
/** What the daemon may grow by while 10 GiB flow through: the inline budget is 1 MiB per stream. */
const DAEMON_GROWTH_BOUND = 96 * MIB;
/** What the sandbox's agent may grow by: a head and a tail ring per stream, the read buffers. */
const AGENT_GROWTH_BOUND = 32 * MIB;

function rssOf(pid: number): number {
  return (
    Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN) * 1024
  );
}

describe('abuse: a 10 GiB print loop in the REPL', { skip: why ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
  });
  after(async () => {
    await fx?.close();
  });

  it('keeps the sandbox, the REPL state and the daemon’s memory', async (t) => {
    const id = (await api.createSandbox({ name: 'flood', memoryMb: 256 })).id;
    assert.equal((await api.runCode(id, { code: 'kept = "before the flood"' })).ok, true);
    const agentPid = initOf(sandboxPids(id));
    const agent0 = rssOf(agentPid);
    const rss0 = process.memoryUsage().rss;
    let peak = rss0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 50);
    let peeks = 0;
    const t0 = performance.now();
    const r = await api
      .runCode(
        id,
        {
          code: "line = 'x' * ((1 << 20) - 1)\nfor _ in range(10 * 1024):\n    print(line)\nprint('END')",
          timeoutSeconds: 1800,
        },
        { onPeek: () => (peeks += 1) },
      )
      .finally(() => clearInterval(sampler));
    const seconds = (performance.now() - t0) / 1000;
    assert.equal(r.ok, true, r.error?.traceback);
    const total = 10 * GIB + 4;
    assert.equal(r.streams?.stdout.totalBytes, total);
    assert.equal(r.truncated, true);
    assert.ok((r.streams?.stdout.shownBytes ?? Infinity) <= MIB, `shown ${r.streams?.stdout.shownBytes}`);
    assert.ok(r.stdout.length <= MIB + 512, `inline stdout of ${r.stdout.length} bytes`);
    assert.ok(r.stdout.endsWith('x\nEND\n'));
    const file = r.streams?.stdout.file ?? '';
    assert.match(
      r.stdout,
      new RegExp(
        `bytes of stdout omitted here; bytes 0-${r.streams?.stdout.spooledBytes} of stdout are in ${file.replace(/\./g, '\\.')} .*; bytes ${r.streams?.stdout.spooledBytes}-\\d+ were not kept`,
      ),
    );
    const st = await api.statFile(id, file);
    assert.equal(st.size, r.streams?.stdout.spooledBytes);
    assert.ok(peeks > 0, 'progress peeks were sent while the output flowed');
    const growth = peak - rss0;
    const line = `10 GiB through the REPL in ${seconds.toFixed(1)} s (${(10240 / seconds).toFixed(0)} MiB/s); daemon RSS growth ${(growth / MIB).toFixed(1)} MiB at peak (bound ${DAEMON_GROWTH_BOUND / MIB} MiB)`;
    t.diagnostic(line);
    process.stderr.write(`[repl-output-flood] ${line}\n`);
    assert.ok(growth < DAEMON_GROWTH_BOUND, line);
    const agentGrowth = rssOf(agentPid) - agent0;
    assert.ok(agentGrowth < AGENT_GROWTH_BOUND, `the agent grew by ${(agentGrowth / MIB).toFixed(1)} MiB`);
    // The sandbox and its REPL are fine.
    assert.equal((await api.runCode(id, { code: 'kept' })).value, "'before the flood'");
    assert.equal((await api.exec(id, { argv: ['echo', 'alive'] })).stdout, 'alive\n');
    assert.equal((await api.getSandbox(id)).state, 'running');
  });
});
