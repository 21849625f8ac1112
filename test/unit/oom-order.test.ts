/**
 * The OOM order (src/runtimes/native/spawn/oom-order.ts, docs/SECURITY.md): newest forks first, never
 * the daemon. The ranks by generation, what is set where the host allows exempting (CAP_SYS_RESOURCE) and
 * where it does not, and a rank written to a real process's /proc/<pid>/oom_score_adj.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createOomOrder, EXEMPT, oomRank } from '../../src/runtimes/native/spawn/oom-order.ts';

const silent = { warn: () => undefined };

function recorder() {
  const writes: [number, number][] = [];
  const setAdj = (pid: number, value: number) => {
    writes.push([pid, value]);
    return true;
  };
  return { writes, setAdj };
}

describe('OOM order', () => {
  it('ranks by generation: every fork above the sandbox it came from, capped below the kernel maximum', () => {
    assert.equal(oomRank(0), 100);
    for (let d = 1; d <= 8; d++) assert.ok(oomRank(d) > oomRank(d - 1), `depth ${d} above depth ${d - 1}`);
    assert.equal(oomRank(8), 900);
    assert.equal(oomRank(50), 900);
    assert.equal(oomRank(-1), 100);
    assert.ok(
      oomRank(0) > 0,
      'every sandbox ranks above the daemon and templates (0 without the capability)',
    );
  });

  it('with CAP_SYS_RESOURCE: the daemon, templates and agents are exempt', () => {
    const r = recorder();
    const o = createOomOrder({ log: silent, canExempt: true, setAdj: r.setAdj });
    o.exemptDaemon(10);
    o.exemptTemplate(11);
    o.rank(12, 3);
    assert.deepEqual(r.writes, [
      [10, EXEMPT],
      [11, EXEMPT],
      [12, EXEMPT],
    ]);
  });

  it('without it: agents take their rank, the daemon and templates are left at 0 (below every rank)', () => {
    const r = recorder();
    const o = createOomOrder({ log: silent, canExempt: false, setAdj: r.setAdj });
    o.exemptDaemon(10);
    o.exemptTemplate(11);
    o.rank(12, 0);
    o.rank(13, 2);
    assert.deepEqual(r.writes, [
      [12, 100],
      [13, 300],
    ]);
  });

  it('a refused write or a process that is gone is logged, never thrown', () => {
    const warned: unknown[] = [];
    const log = { warn: (o: unknown) => warned.push(o) };
    createOomOrder({ log, canExempt: true, setAdj: () => false }).rank(1, 0);
    createOomOrder({ log, canExempt: false }).rank(2 ** 22 + 12345, 0);
    assert.equal(warned.length, 2);
  });

  it('writes the rank of a real process', async () => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      const pid = child.pid as number;
      createOomOrder({ log: silent, canExempt: false }).rank(pid, 2);
      assert.equal(readFileSync(`/proc/${pid}/oom_score_adj`, 'utf8').trim(), '300');
    } finally {
      child.kill('SIGKILL');
    }
  });
});
