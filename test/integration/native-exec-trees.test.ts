/**
 * Execs of real sandboxes as whole process trees (each command in a cgroup of its own), with bounded output:
 * what a normal exit leaves running is counted and kept until cancelled; a timeout, a cancel (also through
 * an AbortSignal) ends every process the command started, setsid'd and double-forked ones included; the
 * middle of a long output is in a spool file inside the sandbox; background execs keep their latest output
 * and tell a poller exactly what it missed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { until } from '../helpers/exec-probe.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();

/** Processes in the sandbox whose command line contains `marker` (seen from inside, with ps). */
async function countIn(api: ForkboxApi, id: string, marker: string): Promise<number> {
  const r = await api.exec(id, { argv: ['ps', '-eo', 'args='] });
  return r.stdout.split('\n').filter((l) => l.includes(marker) && !l.includes('ps -eo')).length;
}

describe('native exec process trees and bounded output', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id = '';

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    id = (await api.createSandbox({})).id;
  });
  after(async () => {
    await fx?.close();
  });

  it('counts what a normal exit leaves running, keeps it, and cancel ends it', async () => {
    const o = await api.exec(id, { cmd: 'sleep 301 & setsid sleep 302 & echo started' });
    assert.equal(o.exitCode, 0);
    assert.equal(o.stdout, 'started\n');
    assert.equal(o.leftovers, 2, JSON.stringify(o));
    const rec = (await api.listExecs(id)).find((e) => e.id === o.execId);
    assert.equal(rec?.leftovers, 2);
    assert.ok(rec?.tree, 'the record names the tree');
    assert.equal(await countIn(api, id, 'sleep 30'), 2, 'the leftovers keep running');
    const after = await api.cancelExec(id, o.execId);
    assert.equal(after.leftovers, 0);
    assert.equal(after.tree, null);
    assert.equal(await countIn(api, id, 'sleep 30'), 0, 'cancel after exit ended them');
  });

  it('a timeout ends every process the command started: setsid, nohup and double-fork children', async () => {
    const o = await api.exec(id, {
      cmd: 'setsid sleep 311 & nohup sleep 312 >/dev/null 2>&1 & (setsid sh -c "sleep 313 &" &) ; sleep 314',
      timeoutSeconds: 1,
    });
    assert.equal(o.timedOut, true);
    assert.equal(o.signal, 9);
    assert.equal(o.leftovers, 0);
    assert.equal(await countIn(api, id, 'sleep 31'), 0, JSON.stringify(o));
    const rec = (await api.listExecs(id)).find((e) => e.id === o.execId);
    assert.equal(rec?.state, 'timed_out');
  });

  it('an AbortSignal cancels the whole tree, and the result says cancelled', async () => {
    const ac = new AbortController();
    const running = api.exec(
      id,
      { cmd: 'setsid sleep 321 & sleep 322 & echo go; wait' },
      {
        signal: ac.signal,
        onOutput: (c) => {
          if (c.data.toString().includes('go')) ac.abort();
        },
      },
    );
    const o = await running;
    assert.equal(o.cancelled, true, JSON.stringify(o));
    assert.equal(o.leftovers, 0);
    assert.equal(await countIn(api, id, 'sleep 32'), 0);
    assert.equal((await api.listExecs(id)).find((e) => e.id === o.execId)?.state, 'cancelled');
  });

  it('returns head and tail of a long output inline, with the whole of it in the spool file', async () => {
    const o = await api.exec(id, { cmd: 'seq 1 300000; echo err >&2', maxOutputBytes: 8192 });
    const full = (await api.exec(id, { cmd: 'seq 1 300000', maxOutputBytes: 64 << 20 })).stdout;
    assert.equal(o.truncated, true);
    assert.ok(o.stdout.startsWith('1\n2\n3\n'));
    assert.ok(o.stdout.endsWith('299999\n300000\n'));
    assert.match(
      o.stdout,
      /\[forkbox: \d+ bytes of stdout omitted here; the whole stdout is in \/tmp\/\.forkbox-output\/ex-[0-9a-f]+\.stdout/,
    );
    assert.equal(o.stderr, 'err\n');
    const s = o.streams?.stdout;
    assert.ok(s);
    assert.equal(s.totalBytes, full.length);
    assert.equal(s.shownBytes, 8192);
    assert.equal(s.omittedBytes, full.length - 8192);
    assert.equal(s.file, `/tmp/.forkbox-output/${o.execId}.stdout`);
    assert.equal(s.spooledBytes, full.length);
    const spooled = await api.readFile(id, s.file);
    assert.equal(spooled.data.toString(), full);
    // A page from the middle, by offset.
    const page = await api.readFile(id, s.file, { offset: 100_000, length: 100 });
    assert.equal(page.data.toString(), full.slice(100_000, 100_100));
    assert.equal(o.streams?.stderr.file, null);
  });

  it('a background exec keeps its latest output; a poller that fell behind is told what it missed and where', async () => {
    const rec = await api.startExec(id, {
      cmd: 'i=0; while [ $i -lt 60 ]; do seq 1 20000; i=$((i+1)); done; echo finished',
      maxOutputBytes: 16 * 1024,
    });
    await until('the exec to end', async () => (await api.pollExec(id, rec.id)).done);
    const first = await api.pollExec(id, rec.id, { afterSeq: -1 });
    assert.equal(first.exec.state, 'exited');
    const stdoutMissed = first.missed.filter((m) => m.stream === 'stdout');
    assert.ok(stdoutMissed.length >= 1, JSON.stringify(first.missed));
    const m = stdoutMissed[0];
    assert.ok(m);
    assert.equal(m.from, 0);
    assert.equal(m.bytes, m.to - 0);
    assert.equal(m.file, `/tmp/.forkbox-output/${rec.id}.stdout`);
    // The kept chunks are the newest ones, the last one is the end of the output, offsets are exact.
    let pos = first.chunks[0]?.offset ?? 0;
    let text = '';
    let r = first;
    for (;;) {
      for (const c of r.chunks) {
        if (c.stream !== 'stdout') continue;
        assert.ok((c.offset ?? 0) >= pos);
        pos = (c.offset ?? 0) + Buffer.byteLength(c.data);
        text += c.data;
      }
      if (r.chunks.length === 0) break;
      r = await api.pollExec(id, rec.id, { afterSeq: r.nextSeq });
    }
    assert.ok(text.endsWith('19999\n20000\nfinished\n'), text.slice(-40));
    const total = r.exec.streams?.stdout.totalBytes ?? 0;
    assert.equal(pos, total, 'the last chunk ends where the stream ends');
    // What was missed is in the spool file at the offsets given.
    const head = await api.readFile(id, m.file ?? '', { offset: 0, length: 12 });
    assert.equal(head.data.toString(), '1\n2\n3\n4\n5\n6\n');
  });
});
