/**
 * Attack (a careless client, and memory exhaustion of the host): the inverse of a denial of service —
 * admission by the sum of limits refused work that fits (a fork of a small REPL with `n: 100` "needs
 * 100 GiB"; the 48th idle sandbox with default limits refused on a 24 GiB host), while admitting by use
 * must still leave the host an order in which the OOM killer takes processes. Precedent: issue #11 item
 * 13; the OOM side is the class of incidents where a host-wide OOM killed the container daemon
 * (dockerd/containerd) instead of a container, taking every workload down with it.
 *
 * Contained when: against a real daemon, a fork of a small REPL with n: 100 and no memory_mb is admitted,
 * and 60 idle sandboxes with default limits are admitted on this host; and the OOM order holds on real
 * processes: a fork's REPL code and commands rank above its source's, which rank above the daemon's.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { describe, it } from 'node:test';
import { DEFAULT_LIMITS } from '../../src/domain/types.ts';
import { abuseDaemon } from '../helpers/abuse.ts';

const GiB = 1024 ** 3;

describe('abuse: admission by the sum of limits refusing work that fits', () => {
  const d = abuseDaemon();

  /** oom_score_adj as seen by a command, and by REPL code, inside sandbox `id`. */
  const ranks = async (id: string) => {
    const cmd = await d.api.exec(id, { argv: ['cat', '/proc/self/oom_score_adj'] });
    const repl = await d.api.runCode(id, { code: "int(open('/proc/self/oom_score_adj').read())" });
    return { command: Number(cmd.stdout.trim()), repl: Number(repl.value) };
  };

  it('admits a fork of a small REPL with n: 100 and no memory_mb, children ranked for OOM above it', async () => {
    const src = await d.api.createSandbox({});
    await d.api.runCode(src.id, { code: 'state = list(range(1000))' });
    const r = await d.api.forkSandbox(src.id, { n: 100 });
    const failed = r.children.filter((c) => !c.ok);
    assert.deepEqual(failed, [], 'every child admitted and made');
    assert.equal(r.children.length, 100);
    const kids = r.children.map((c) => c.sandbox?.id as string);
    // The sum of limits (100 × the 1 GiB default) is far past this host's memory: admitted by use.
    assert.ok(100 * DEFAULT_LIMITS.memoryBytes > totalmem());

    const kid = kids[0] as string;
    assert.equal((await d.api.runCode(kid, { code: 'len(state)' })).value, '1000');
    const daemonRank = Number(readFileSync(`/proc/${d.pid}/oom_score_adj`, 'utf8').trim());
    const source = await ranks(src.id);
    const child = await ranks(kid);
    assert.ok(
      source.command > daemonRank && source.repl > daemonRank,
      `source above the daemon (${daemonRank})`,
    );
    assert.ok(
      child.command > source.command,
      `a fork's commands first (${child.command} > ${source.command})`,
    );
    assert.ok(child.repl > source.repl, `a fork's REPL code first (${child.repl} > ${source.repl})`);

    await d.api.killSandbox(src.id, { cascade: true });
    for (const id of kids) assert.equal((await d.api.getSandbox(id)).state, 'killed');
  });

  it('admits 60 idle sandboxes with default limits', async () => {
    const ids: string[] = [];
    try {
      for (let i = 0; i < 60; i++) ids.push((await d.api.createSandbox({})).id);
      assert.equal(ids.length, 60);
      assert.ok(60 * DEFAULT_LIMITS.memoryBytes > Math.min(totalmem(), 48 * GiB));
      const last = ids.at(-1) as string;
      assert.equal((await d.api.exec(last, { argv: ['echo', 'admitted'] })).stdout, 'admitted\n');
    } finally {
      for (const id of ids) await d.api.killSandbox(id);
    }
  });
});
