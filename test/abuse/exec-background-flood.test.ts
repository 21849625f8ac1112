/**
 * Attack: a background command (what an agent starts for a dev server) floods its output forever while
 * nobody polls it, or a poller lags far behind — to grow the daemon's stored output and memory without end.
 * Precedent: issue #11 items 4 and 7 — exec output grew forkbox.db to 1 GB and the daemon's RSS to 1.93 GB.
 * Contained when the daemon (a real `forkbox serve`) stays within a fixed RSS bound, keeps only the latest
 * output, tells the lagging poller exactly how many bytes it missed and in which file they are, and a
 * cancel ends the flood.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DaemonClient } from '../../src/transports/daemon-client.ts';
import { type AbuseDaemon, startDaemon } from '../helpers/abuse.ts';
import { processesIn, rssMiB, sampleRss, until } from '../helpers/exec-probe.ts';
import { nativeUnavailable } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

const skip = nativeUnavailable();
const RSS_GROWTH_BOUND_MIB = 64;

describe('abuse: background exec output flood with a lagging poller', { skip: skip ?? false }, () => {
  let daemon: AbuseDaemon | undefined;
  let api: DaemonClient;

  before(async () => {
    daemon = await startDaemon();
    api = daemon.api;
  });
  after(async () => {
    await daemon?.stop();
  });

  it('keeps the daemon bounded, tells the poller what it missed and where, and cancel ends it', async () => {
    const pid = daemon?.pid ?? 0;
    const { id } = await api.createSandbox({});
    await api.exec(id, { argv: ['true'] });
    const before = rssMiB(pid);
    const sampler = sampleRss(pid);
    const rec = await api.startExec(id, { cmd: 'yes flood-line', maxOutputBytes: 64 * 1024 });
    // An early poll, then a long silence while the command floods.
    let max: number;
    let first: Awaited<ReturnType<typeof api.pollExec>>;
    let late: typeof first;
    try {
      first = await api.pollExec(id, rec.id, { afterSeq: -1, waitMs: 5000 });
      while (first.chunks.length === 0)
        first = await api.pollExec(id, rec.id, { afterSeq: -1, waitMs: 5000 });
      // A long silence: the poller looks again only once the daemon has let 8 MiB go past its position
      // (a poll does not consume, so looking is free); a daemon that never says so fails here.
      late = await waitFor(
        async () => {
          const p = await api.pollExec(id, rec.id, { afterSeq: first.nextSeq });
          const m = p.missed.find((x) => x.stream === 'stdout');
          return (m?.bytes ?? 0) >= 8 * 1024 * 1024 ? p : undefined;
        },
        { what: '8 MiB of output went past the lagging poller', timeoutMs: 60_000, intervalMs: 200 },
      );
    } finally {
      max = sampler.stop();
    }
    const missed = late.missed.find((m) => m.stream === 'stdout');
    assert.ok(missed, `a poller that lagged is told: ${JSON.stringify(late.missed)}`);
    assert.notEqual(missed.from, null, 'its position is known');
    assert.ok((missed.bytes ?? 0) >= 8 * 1024 * 1024, `it missed megabytes (${missed.bytes})`);
    assert.equal(missed.file, `/tmp/.forkbox-output/${rec.id}.stdout`);
    // Bytes it missed are there, as far as the spool file reaches (64 MiB by default).
    const from = missed.from ?? 0;
    if (from < 64 * 1024 * 1024) {
      const page = await api.readFile(id, missed.file ?? '', { offset: from, length: 64 });
      assert.ok(
        /^(flood-line\n|lood-line\n|ood-line\n|od-line\n|d-line\n|-line\n|line\n|ine\n|ne\n|e\n|\n)/.test(
          page.data.toString(),
        ),
      );
    }
    const kept = late.chunks.reduce((a, c) => a + Buffer.byteLength(c.data), 0);
    assert.ok(kept <= 2 * 64 * 1024 + 64 * 1024, `the daemon kept only the latest output (${kept} bytes)`);
    const growth = max - before;
    assert.ok(
      growth < RSS_GROWTH_BOUND_MIB,
      `daemon RSS grew ${growth.toFixed(1)} MiB (${before.toFixed(1)} → ${max.toFixed(1)})`,
    );
    const ended = await api.cancelExec(id, rec.id);
    assert.equal(ended.state, 'cancelled');
    await until(
      'the flood to be gone',
      async () => (await processesIn(api, id, 'yes flood-line')).length === 0,
      10_000,
    );
    assert.equal((await api.exec(id, { argv: ['echo', 'alive'] })).stdout, 'alive\n');
  });
});
