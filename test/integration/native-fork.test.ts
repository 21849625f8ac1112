/**
 * Forking a running sandbox (docs/ARCHITECTURE.md, "Fork") against the real runtime: children inherit files and the
 * live Python REPL (variables, imported modules, open files, a large list), are isolated from the source
 * and from each other, reseed their RNGs, fork again, and outlive a killed source.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ForkboxError } from '../../src/domain/errors.ts';
import { mountsUnder } from '../../src/runtimes/native/host/mounts.ts';
import { MAX_FORK_DEPTH } from '../../src/runtimes/native/native-runtime.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import {
  cpuWeightRelative,
  sandboxCgroupDirsLeft,
  sandboxCgroupRel,
  sandboxProcs,
} from '../helpers/cgroup-files.ts';
import { type NativeFixture, nativeUnavailable, openNative, snapshotLayers } from '../helpers/native.ts';

const skip = nativeUnavailable();

describe('forking a running sandbox', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let src: string;
  let kids: string[] = [];

  const py = async (id: string, code: string) => {
    const r = await api.runCode(id, { code, timeoutSeconds: 30 });
    assert.equal(r.ok, true, `${code}: ${r.error?.traceback ?? ''}`);
    return r;
  };
  const sh = async (id: string, cmd: string) => (await api.exec(id, { cmd })).stdout;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    // The source is an MCP client's default sandbox: its children must not become one (issue: after a
    // restart a client adopted a fork as its default sandbox).
    src = (
      await api.createSandbox({
        name: 'src',
        memoryMb: 512,
        labels: { team: 'x', 'forkbox.mcp-default': 'true', 'forkbox.mcp-default-owner': 'o1' },
      })
    ).id;
    await sh(src, 'mkdir -p /work && echo from-source > /work/shared.txt');
    await py(
      src,
      [
        'import json, random',
        'x = 42',
        'big = list(range(1_000_000))',
        "log = open('/work/log.txt', 'a+')",
        "log.write('source-before\\n'); log.flush()",
      ].join('\n'),
    );
  });
  after(async () => {
    await fx?.close();
  });

  it('forks into 3 children that see the files, variables, modules, open file and big list', async () => {
    const r = await api.forkSandbox(src, { n: 3 });
    assert.equal(r.children.length, 3);
    assert.ok(
      r.children.every((c) => c.ok),
      JSON.stringify(r.children.filter((c) => !c.ok)),
    );
    assert.equal(r.carried.pythonState, true);
    assert.equal(r.carried.filesystem, true);
    // The pause is the source's workload frozen while its upper becomes a read-only layer: it contains
    // the snapshot, which the storage driver really did (how long either takes: bench/fork.ts).
    assert.ok(['btrfs', 'copy'].includes(r.driver), r.driver);
    assert.ok(r.snapshotMs > 0, `snapshotMs ${r.snapshotMs}`);
    assert.ok(r.pauseMs >= r.snapshotMs, `pauseMs ${r.pauseMs} < snapshotMs ${r.snapshotMs}`);
    kids = r.children.map((c) => c.sandbox?.id ?? '');
    for (const [i, k] of kids.entries()) {
      const info = await api.getSandbox(k);
      assert.equal(info.parentId, src);
      assert.equal(info.depth, 1);
      assert.deepEqual(info.labels, { team: 'x' }, 'a fork keeps labels, never the default-sandbox role');
      assert.equal((await py(k, 'x')).value, '42');
      assert.equal((await py(k, 'len(big), big[-1]')).value, '(1000000, 999999)');
      assert.equal((await py(k, "json.dumps({'ok': True})")).value, `'{"ok": true}'`);
      assert.equal(await sh(k, 'cat /work/shared.txt'), 'from-source\n');
      assert.equal(
        await sh(k, 'echo $FORKBOX_SANDBOX_ID $FORKBOX_PARENT_ID $FORKBOX_FORK_INDEX'),
        `${k} ${src} ${i}\n`,
      );
      const env = await py(
        k,
        "import os; (os.environ['FORKBOX_SANDBOX_ID'], os.environ['FORKBOX_PARENT_ID'], os.environ['FORKBOX_FORK_INDEX'])",
      );
      assert.equal(env.value, `('${k}', '${src}', '${i}')`);
    }
  });

  it('keeps each child’s writes away from the source and its siblings', async () => {
    const [a, b] = kids as [string, string, string];
    await py(a, "x = 'child-a'\nlog.write('child-a\\n'); log.flush()");
    await sh(a, 'echo a > /work/shared.txt; echo only-a > /work/a.txt');
    await py(b, "x = 'child-b'\nlog.write('child-b\\n'); log.flush()");
    assert.equal((await py(src, 'x')).value, '42');
    assert.equal((await py(b, 'x')).value, "'child-b'");
    assert.equal(await sh(src, 'cat /work/shared.txt'), 'from-source\n');
    assert.equal(await sh(b, 'cat /work/shared.txt; ls /work'), 'from-source\nlog.txt\nshared.txt\n');
    // Writes through the inherited open file handle land in each sandbox's own copy.
    assert.equal(await sh(src, 'cat /work/log.txt'), 'source-before\n');
    assert.equal(await sh(a, 'cat /work/log.txt'), 'source-before\nchild-a\n');
    assert.equal(await sh(b, 'cat /work/log.txt'), 'source-before\nchild-b\n');
  });

  it('reseeds random in each child', async () => {
    const draws = new Set<string>();
    for (const k of kids) draws.add((await py(k, 'random.random()')).value ?? '');
    assert.equal(draws.size, kids.length);
  });

  it('keeps the source working, and sees children as separate process trees', async () => {
    assert.equal((await py(src, 'x + 1')).value, '43');
    assert.equal(await sh(src, 'echo ok'), 'ok\n');
    const ps = await sh(kids[0] ?? '', 'ps -eo pid,comm --no-headers');
    assert.match(ps, /^\s*1 python3/m, 'a child’s agent is PID 1 of its own pid namespace');
  });

  it('forks a child again (a grandchild) and a child keeps working when the source is killed', async () => {
    const g = await api.forkSandbox(kids[0] ?? '', { n: 1 });
    const gid = g.children[0]?.sandbox?.id ?? '';
    assert.ok(g.children[0]?.ok, JSON.stringify(g.children[0]));
    assert.equal((await api.getSandbox(gid)).depth, 2);
    assert.equal((await py(gid, 'x')).value, "'child-a'");
    assert.equal(await sh(gid, 'cat /work/a.txt'), 'only-a\n');

    const killed = await api.killSandbox(src);
    assert.equal(killed.state, 'killed');
    assert.match(killed.endReason ?? '', /PID 1 stays/);
    await assert.rejects(api.exec(src, { argv: ['true'] }), (e: ForkboxError) => e.code === 'conflict');
    for (const k of [...kids, gid]) assert.equal((await py(k, '1 + 1')).value, '2', `${k} still works`);

    // Killing the last descendants releases the source's tombstone and its disk.
    await api.killSandbox(kids[0] ?? '', { cascade: true });
    assert.equal((await api.getSandbox(gid)).state, 'killed');
    for (const k of kids.slice(1)) await api.killSandbox(k);
    assert.equal(existsSync(join(fx.stateDir, 'sandboxes', src)), false);
    assert.deepEqual(snapshotLayers(fx.stateDir), [], 'snapshot layers are freed when nothing uses them');
    assert.equal(readFileSync('/proc/self/mountinfo', 'utf8').includes(src), false);
  });

  it('forks down to the pid-namespace depth limit, then falls back to files only and says so', async () => {
    const root = (await api.createSandbox({ memoryMb: 128 })).id;
    await py(root, 'lineage = 0');
    await sh(root, 'echo root-file > /root/mark.txt');
    let cur = root;
    for (let depth = 1; depth < MAX_FORK_DEPTH; depth++) {
      const r = await api.forkSandbox(cur, { n: 1 });
      assert.equal(r.carried.pythonState, true, `depth ${depth}`);
      cur = r.children[0]?.sandbox?.id ?? '';
      assert.equal((await api.getSandbox(cur)).depth, depth);
      await py(cur, 'lineage += 1');
    }
    assert.equal(
      (await py(cur, 'lineage')).value,
      String(MAX_FORK_DEPTH - 1),
      'Python state carried all the way',
    );
    const last = await api.forkSandbox(cur, { n: 1 });
    assert.equal(last.carried.pythonState, false);
    assert.match(last.notCarried[0] ?? '', /depth limit/);
    const leaf = last.children[0]?.sandbox?.id ?? '';
    assert.ok(last.children[0]?.ok, JSON.stringify(last.children[0]));
    assert.equal(await sh(leaf, 'cat /root/mark.txt'), 'root-file\n', 'files carried');
    assert.equal((await api.runCode(leaf, { code: 'lineage' })).ok, false, 'a fresh REPL');
    await api.killSandbox(root, { cascade: true });
    assert.equal((await api.getSandbox(leaf)).state, 'killed');
  });

  it('keeps the source’s commands running through a fork, and gives its CPU weight back after', async () => {
    const s = (await api.createSandbox({ memoryMb: 256 })).id;
    const bg = await api.startExec(s, {
      cmd: 'for i in $(seq 40); do echo $i >> /tmp/ticks; sleep 0.02; done; wc -l < /tmp/ticks',
    });
    const r = await api.forkSandbox(s, { n: 3, memoryMb: 64 });
    assert.ok(r.children.every((c) => c.ok));
    let poll = await api.pollExec(s, bg.id, { waitMs: 10_000 });
    while (!poll.done) poll = await api.pollExec(s, bg.id, { afterSeq: poll.nextSeq, waitMs: 10_000 });
    assert.equal(poll.exec.exitCode, 0, 'the command was paused for the snapshot, never killed');
    const all = await api.pollExec(s, bg.id);
    assert.equal(
      all.chunks
        .map((c) => c.data)
        .join('')
        .trim(),
      '40',
    );
    // While it forks, the source weighs as much as its children together; after, it is back to normal.
    assert.equal(cpuWeightRelative(sandboxCgroupRel(fx.stateDir, s)), 1);
    await api.killSandbox(s, { cascade: true });
  });

  it('forks 20 children in two waves; each child is one process until it first runs Python', async () => {
    const s = (await api.createSandbox({ memoryMb: 256 })).id;
    await py(s, 'tag = "wave"');
    const r = await api.forkSandbox(s, { n: 20, memoryMb: 64 });
    assert.ok(
      r.children.every((c) => c.ok),
      JSON.stringify(r.children.filter((c) => !c.ok)),
    );
    const ids = r.children.map((c) => c.sandbox?.id ?? '');
    const indexes = new Set<string>();
    for (const k of ids) indexes.add(await sh(k, 'echo $FORKBOX_FORK_INDEX'));
    assert.equal(indexes.size, 20, 'every child has its own fork index');
    const procs = (id: string) => sandboxProcs(fx.stateDir, id);
    // Each child is one process (its agent, holding the copied REPL state) until Python is needed; the
    // commands above added one more: the spawner that starts commands (src/agent/spawner.py).
    assert.equal(procs(ids[19] ?? '').length, 2);
    assert.equal((await py(ids[19] ?? '', 'tag')).value, "'wave'");
    assert.equal(procs(ids[19] ?? '').length, 3, 'the REPL worker was forked off PID 1 on first use');
    await api.killSandbox(s, { cascade: true });
  });

  it('forks a REPL that runs threads (the two-step path) and keeps its state', async () => {
    const s = (await api.createSandbox({ memoryMb: 256 })).id;
    await py(
      s,
      'import threading, time\nv = "threaded"\nthreading.Thread(target=time.sleep, args=(60,), daemon=True).start()',
    );
    const r = await api.forkSandbox(s, { n: 2, memoryMb: 64 });
    assert.ok(
      r.children.every((c) => c.ok),
      JSON.stringify(r.children),
    );
    for (const c of r.children) {
      const id = c.sandbox?.id ?? '';
      assert.equal((await py(id, 'v')).value, "'threaded'");
      assert.match(await sh(id, 'ps -eo pid,comm --no-headers'), /^\s*1 python3/m);
    }
    await api.killSandbox(s, { cascade: true });
  });

  it('reports a child whose set-up failed inside it, by its error, and cleans it up', async () => {
    const s = (await api.createSandbox({ memoryMb: 256 })).id;
    // The worker runs user code, and every child is a copy of it: break the step of the fork machinery that
    // makes each child's fresh /dev (it binds the source's /dev/null there).
    await py(
      s,
      "import sys\ndef _gone(*a):\n    raise FileNotFoundError(2, 'No such file or directory', '/dev/null')\nsys.modules['forking']._fresh_dev = _gone",
    );
    const r = await api.forkSandbox(s, { n: 2, memoryMb: 64 });
    assert.equal(r.children.length, 2);
    for (const c of r.children) {
      assert.equal(c.ok, false);
      assert.match(c.error?.message ?? '', /set-up failed inside the new sandbox: .*\/dev\/null/);
    }
    const failed = (await api.listSandboxes({ all: true })).filter(
      (x) => x.parentId === s && x.state === 'failed',
    );
    assert.equal(failed.length, 2);
    for (const f of failed) {
      assert.deepEqual(sandboxCgroupDirsLeft(fx.stateDir, f.id), [], 'no cgroup left');
      assert.equal(existsSync(join(fx.stateDir, 'sandboxes', f.id)), false, 'no sandbox dir left');
      assert.equal(existsSync(join(fx.stateDir, 'inbox', f.id)), false, 'no inbox left');
    }
    assert.equal((await py(s, '6 * 7')).value, '42', 'the source keeps working');
    await api.killSandbox(s);
  });

  it('refuses bad forks clearly and leaves nothing half-made', async () => {
    const s = (await api.createSandbox({})).id;
    const code = async (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (e: ForkboxError) => `${e.code}: ${e.message}`,
      );
    assert.match(await code(api.forkSandbox('sb-nope', { n: 1 })), /^not_found/);
    assert.match(await code(api.forkSandbox(s, { n: 0 })), /^invalid_argument: n must be .* 1 to 100/);
    assert.match(await code(api.forkSandbox(s, { n: 101 })), /^invalid_argument/);
    await api.pauseSandbox(s);
    assert.match(await code(api.forkSandbox(s, { n: 1 })), /^conflict: .*paused/);
    await api.killSandbox(s);
    assert.match(await code(api.forkSandbox(s, { n: 1 })), /^conflict: .*killed/);
    const leftovers = mountsUnder(join(fx.stateDir, 'inbox')).filter(
      (m) => !/\/inbox(\/tpl-[0-9a-f]+)?$/.test(m),
    );
    assert.deepEqual(leftovers, []);
    assert.deepEqual(snapshotLayers(fx.stateDir), []);
  });
});
