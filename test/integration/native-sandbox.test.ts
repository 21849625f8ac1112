/**
 * The native runtime end to end, in-process: create, exec, REPL, files, pause/resume, TTL, kill —
 * real runc templates, forked sandboxes, overlay roots and cgroups.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { ForkboxError } from '../../src/domain/errors.ts';
import { detectCgroups } from '../../src/runtimes/native/cgroups/index.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { sandboxCgroupDirsLeft, sandboxCgroupRel } from '../helpers/cgroup-files.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

const skip = nativeUnavailable();

async function rejectsWith(p: Promise<unknown>, code: string, re?: RegExp): Promise<ForkboxError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ForkboxError, `expected a ForkboxError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (re) assert.match(e.message, re);
    return e;
  }
  assert.fail(`expected an error with code ${code}`);
}

describe('native sandboxes', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id: string;
  // Whatever this host's cgroup version: a path under one v1 hierarchy would not exist on v2 at all.
  let cgroups: ReturnType<typeof detectCgroups>;

  before(async () => {
    fx = await openNative();
    cgroups = detectCgroups();
    api = fx.opened.api;
    id = (await api.createSandbox({ name: 'basic' })).id;
  });
  after(async () => {
    await fx?.close();
  });

  it('runs a command and returns its output and exit code', async () => {
    const r = await api.exec(id, { argv: ['python3', '-c', 'print(6*7)'] });
    assert.equal(r.stdout, '42\n');
    assert.equal(r.exitCode, 0);
    const fail = await api.exec(id, { cmd: 'echo oops >&2; exit 3' });
    assert.equal(fail.exitCode, 3);
    assert.equal(fail.stderr, 'oops\n');
  });

  it('streams output chunks in order with sequence numbers', async () => {
    // Each line is printed only after the host saw the previous one (it then drops a file the command
    // waits for): three chunks arrive while the command runs, whatever the machine's speed.
    const seqs: number[] = [];
    const r = await api.exec(
      id,
      { cmd: 'for i in 1 2 3; do echo $i; while [ ! -e /tmp/seen$i ]; do sleep 0.01; done; done' },
      {
        onOutput: (c) => {
          seqs.push(c.seq);
          for (const n of c.data.toString().trim().split('\n'))
            void api.writeFile(id, `/tmp/seen${n}`, Buffer.alloc(0));
        },
      },
    );
    assert.equal(r.stdout, '1\n2\n3\n');
    assert.equal(seqs.length, 3, 'one chunk per line, streamed before the command ended');
    assert.deepEqual(
      seqs,
      [...seqs].sort((a, b) => a - b),
    );
  });

  it('feeds stdin', async () => {
    const r = await api.exec(id, { argv: ['tr', 'a-z', 'A-Z'], stdin: Buffer.from('hello\n') });
    assert.equal(r.stdout, 'HELLO\n');
  });

  it('keeps REPL state across calls, survives exceptions and returns trailing values', async () => {
    const a = await api.runCode(id, { code: 'x = 41\nimport json' });
    assert.equal(a.ok, true);
    const b = await api.runCode(id, { code: 'x + 1' });
    assert.equal(b.value, '42');
    const c = await api.runCode(id, { code: '1/0' });
    assert.equal(c.ok, false);
    assert.equal(c.error?.type, 'ZeroDivisionError');
    assert.match(c.error?.traceback ?? '', /ZeroDivisionError/);
    const d = await api.runCode(id, { code: 'print(json.dumps({"x": x}))' });
    assert.equal(d.stdout, '{"x": 41}\n');
  });

  it('interrupts an infinite loop at the timeout and keeps the state', async () => {
    const r = await api.runCode(id, { code: 'while True: pass', timeoutSeconds: 1 });
    assert.equal(r.ok, false);
    assert.equal(r.timedOut, true);
    assert.equal(r.restarted, false);
    assert.equal((await api.runCode(id, { code: 'x' })).value, '41');
  });

  it('runs bash code as a fresh process', async () => {
    const r = await api.runCode(id, { language: 'bash', code: 'echo $((6*7))' });
    assert.equal(r.stdout, '42\n');
    assert.equal(r.ok, true);
  });

  it('reads, writes, lists, stats, moves and deletes files', async () => {
    const bin = Buffer.from([0, 1, 2, 255, 254, 10, 13]);
    await api.writeFile(id, '/work/data.bin', bin, { createDirs: true });
    assert.deepEqual((await api.readFile(id, '/work/data.bin')).data, bin);
    const st = await api.statFile(id, '/work/data.bin');
    assert.equal(st.type, 'file');
    assert.equal(st.size, bin.length);
    await api.moveFile(id, '/work/data.bin', '/work/moved.bin');
    const ls = await api.listFiles(id, '/work');
    assert.deepEqual(
      ls.entries.map((e) => e.name),
      ['moved.bin'],
    );
    const seen = await api.exec(id, { argv: ['cat', '/work/moved.bin'] });
    assert.equal(Buffer.from(seen.stdout, 'latin1').length > 0, true);
    await api.deleteFile(id, '/work', { recursive: true });
    await rejectsWith(api.statFile(id, '/work'), 'not_found', /work/);
  });

  it('gives clear errors for bad paths and unknown sandboxes', async () => {
    await rejectsWith(api.readFile(id, '/no/such/file'), 'not_found', /\/no\/such\/file/);
    await rejectsWith(api.readFile(id, '/etc'), 'invalid_argument', /directory/);
    await rejectsWith(api.exec('sb-doesnotexist', { argv: ['true'] }), 'not_found', /forkbox ls/);
    await rejectsWith(api.exec(id, { argv: [] }), 'invalid_argument', /argv/);
  });

  it('takes a 50 MB write and reads it back', async () => {
    const big = Buffer.alloc(50 * 1024 * 1024, 7);
    big[12345] = 1;
    const w = await api.writeFile(id, '/tmp/big.bin', big);
    assert.equal(w.size, big.length);
    const r = await api.exec(id, { cmd: 'stat -c %s /tmp/big.bin && md5sum /tmp/big.bin | cut -c1-8' });
    assert.equal(r.stdout.split('\n')[0], String(big.length));
    await rejectsWith(
      api.writeFile(id, '/tmp/huge.bin', Buffer.alloc(65 * 1024 * 1024)),
      'too_large',
      /limit/,
    );
  });

  it('reports live usage and pauses and resumes', async () => {
    const info = await api.getSandbox(id, { usage: true });
    assert.ok(info.usage && info.usage.memoryBytes > 0 && info.usage.pids >= 2, JSON.stringify(info.usage));
    await api.pauseSandbox(id);
    assert.equal((await api.getSandbox(id)).state, 'paused');
    await rejectsWith(api.exec(id, { argv: ['true'] }), 'conflict', /resume/);
    await api.resumeSandbox(id);
    assert.equal((await api.exec(id, { argv: ['true'] })).exitCode, 0);
  });

  it('runs background execs with poll, stdin and cancel', async () => {
    const ex = await api.startExec(id, {
      argv: ['sh', '-c', 'read line; echo got $line; sleep 30'],
      stdin: true,
    });
    await api.writeExecStdin(id, ex.id, Buffer.from('ping\n'));
    let out = '';
    let seq = -1;
    for (let i = 0; i < 50 && !out.includes('got ping'); i++) {
      const p = await api.pollExec(id, ex.id, { afterSeq: seq, waitMs: 500 });
      out += p.chunks.map((c) => c.data).join('');
      seq = p.nextSeq;
    }
    assert.match(out, /got ping/);
    const cancelled = await api.cancelExec(id, ex.id);
    assert.equal(cancelled.state, 'cancelled');
    assert.ok((await api.listExecs(id)).some((e) => e.id === ex.id));
  });

  it('does not run a command twice for the same idempotency key', async () => {
    const a = await api.exec(id, { cmd: 'echo run >> /tmp/idem; wc -l < /tmp/idem', idempotencyKey: 'k1' });
    const b = await api.exec(id, { cmd: 'echo run >> /tmp/idem; wc -l < /tmp/idem', idempotencyKey: 'k1' });
    assert.equal(a.execId, b.execId);
    assert.equal(b.stdout.trim(), '1');
  });

  it('reaps a sandbox when its TTL passes', async () => {
    const s = await api.createSandbox({ ttlSeconds: 1 });
    const info = await waitFor(
      async () => {
        const cur = await api.getSandbox(s.id);
        return cur.state === 'killed' ? cur : null;
      },
      { what: `sandbox ${s.id} (ttl 1 s) is reaped`, timeoutMs: 30_000 },
    );
    assert.match(info.endReason ?? '', /TTL/);
  });

  it('kills a sandbox during a running exec and releases its mounts, cgroups and disk', async () => {
    const s = await api.createSandbox({});
    const cgroup = sandboxCgroupRel(fx.stateDir, s.id);
    assert.equal(await cgroups.exists(cgroup), true, 'the live sandbox has its cgroup');
    let started!: () => void;
    const isRunning = new Promise<void>((r) => {
      started = r;
    });
    const running = api
      .exec(s.id, { cmd: 'echo started; exec sleep 1000' }, { onOutput: () => started() })
      .then(
        (o) => o,
        (e: unknown) => e,
      );
    await isRunning;
    await api.killSandbox(s.id);
    const settled = await running;
    assert.ok(settled instanceof Error, 'the exec ends with an error');
    assert.match(settled.message, /killed/);
    assert.equal((await api.getSandbox(s.id)).state, 'killed');
    assert.equal(existsSync(`${fx.stateDir}/sandboxes/${s.id}`), false);
    assert.deepEqual(sandboxCgroupDirsLeft(fx.stateDir, s.id), [], 'no directory of its cgroup is left');
    assert.equal(await cgroups.exists(cgroup), false);
    assert.equal(readFileSync('/proc/self/mountinfo', 'utf8').includes(s.id), false);
    await rejectsWith(api.exec(s.id, { argv: ['true'] }), 'conflict', /killed/);
  });
});
