/**
 * Attack: a command floods its output — 10 GB of zeros — to exhaust the memory of whatever buffers it on
 * the way out: the agent, the daemon, the client. Precedent: issue #11 item 4, where such a flood took the
 * daemon's RSS to 1.93 GB (1.6 GB kept after) and a REPL print loop made the OOM killer take the agent.
 * Contained when the exec ends with a bounded head and tail inline, the cut part is readable from the spool
 * file inside the sandbox, the daemon (a real `forkbox serve`) grew by less than a fixed bound, and the
 * agent and the sandbox still answer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DaemonClient } from '../../src/transports/daemon-client.ts';
import { type AbuseDaemon, startDaemon } from '../helpers/abuse.ts';
import { rssMiB, sampleRss } from '../helpers/exec-probe.ts';
import { nativeUnavailable } from '../helpers/native.ts';

const skip = nativeUnavailable();
/** The daemon sees at most head + tail of each stream (1 MiB each by default): far below this. */
const RSS_GROWTH_BOUND_MIB = 64;
const FLOOD = 10 * 1024 * 1024 * 1024;

describe('abuse: 10 GB output flood from an exec', { skip: skip ?? false }, () => {
  let daemon: AbuseDaemon | undefined;
  let api: DaemonClient;

  before(async () => {
    daemon = await startDaemon();
    api = daemon.api;
  });
  after(async () => {
    await daemon?.stop();
  });

  it('ends with head and tail inline, the rest spooled, the daemon bounded and the sandbox usable', async () => {
    const pid = daemon?.pid ?? 0;
    const { id } = await api.createSandbox({});
    await api.exec(id, { argv: ['true'] }); // warm: the daemon's steady state, not its first exec
    const before = rssMiB(pid);
    const sampler = sampleRss(pid);
    const o = await api.exec(id, { cmd: `head -c ${FLOOD} /dev/zero; echo tail-marker` });
    const max = sampler.stop();
    assert.equal(o.exitCode, 0, JSON.stringify({ ...o, stdout: o.stdout.length }));
    const s = o.streams?.stdout;
    assert.ok(s, 'the result describes the stream');
    assert.equal(s.totalBytes, FLOOD + 'tail-marker\n'.length);
    assert.equal(s.shownBytes, 1024 * 1024, 'head + tail: the default 1 MiB per stream');
    assert.ok(o.stdout.endsWith('tail-marker\n'), 'the end of the output is in the result');
    assert.equal(o.truncated, true);
    assert.equal(s.file, `/tmp/.forkbox-output/${o.execId}.stdout`);
    assert.equal(s.spooledBytes, 256 * 1024 * 1024, 'the spool file stops at its cap (256 MiB)');
    assert.match(o.stdout, /bytes 0-268435456 of stdout are in .*; bytes 268435456-\d+ were not kept/);
    // The cut part is readable, by offset, from the spool file.
    const page = await api.readFile(id, s.file, { offset: 10 * 1024 * 1024, length: 4096 });
    assert.deepEqual(page.data, Buffer.alloc(4096));
    assert.equal(page.size, 256 * 1024 * 1024);
    const growth = max - before;
    assert.ok(
      growth < RSS_GROWTH_BOUND_MIB,
      `daemon RSS grew ${growth.toFixed(1)} MiB (${before.toFixed(1)} → ${max.toFixed(1)})`,
    );
    // The agent and the sandbox answer.
    assert.equal((await api.exec(id, { argv: ['echo', 'alive'] })).stdout, 'alive\n');
    assert.equal((await api.getSandbox(id)).state, 'running');
  });
});
