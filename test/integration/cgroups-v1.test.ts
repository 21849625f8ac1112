import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { createCgroupsV1, detectCgroups, resolveV1Mounts } from '../../src/runtimes/native/cgroups/index.ts';

const ROOT = '/sys/fs/cgroup';

function skipReason(): string | null {
  if (process.getuid?.() !== 0) return 'needs root';
  const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
  const mem = mounts.find((l) => l.split(' ')[4] === `${ROOT}/memory`);
  const fstype = mem?.split(' - ')[1]?.split(' ')[0];
  if (fstype !== 'cgroup') return `${ROOT}/memory is not a cgroup v1 mount (found ${fstype ?? 'no mount'})`;
  return null;
}
const skip = skipReason();

const PREFIX = `forkbox-test/${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
const MB = 1024 * 1024;

describe('cgroups v1 (real hierarchy)', { skip: skip ?? false }, () => {
  // Constructed lazily so a skipped run never touches /sys/fs/cgroup.
  const cg = skip ? undefined : createCgroupsV1({ root: ROOT });
  const cgroups = () => cg as NonNullable<typeof cg>;
  const { dirs } = resolveV1Mounts(ROOT);
  const hier = (c: 'memory' | 'pids' | 'cpu' | 'cpuacct' | 'cpuset' | 'freezer', rel: string, f = '') =>
    path.join(dirs.get(c) as string, rel, f);
  const read = (c: Parameters<typeof hier>[0], rel: string, f: string) =>
    fs.readFileSync(hier(c, rel, f), 'utf8').trim();
  const children: ChildProcess[] = [];

  function spawnTracked(argv: string[]): ChildProcess {
    const [cmd, ...args] = argv;
    const child = spawn(cmd as string, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    children.push(child);
    return child;
  }

  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await cgroups().killAll(PREFIX, 5_000);
    await cgroups().destroy(PREFIX);
    if ((await cgroups().children('forkbox-test')).length === 0) await cgroups().destroy('forkbox-test');
  });

  it('detectCgroups picks v1 on this host', () => {
    assert.equal(detectCgroups().kind, 'v1');
  });

  it('creates a group in every controller with the limits, and raises/lowers memory', async () => {
    const rel = `${PREFIX}/limits`;
    await cgroups().create(rel, { memoryBytes: 64 * MB, pids: 20, cpus: 0.5 });
    await cgroups().create(rel, { memoryBytes: 64 * MB, pids: 20, cpus: 0.5 }); // idempotent
    assert.equal(read('memory', rel, 'memory.limit_in_bytes'), String(64 * MB));
    if (fs.existsSync(hier('memory', rel, 'memory.memsw.limit_in_bytes'))) {
      assert.equal(read('memory', rel, 'memory.memsw.limit_in_bytes'), String(64 * MB));
    }
    assert.equal(read('pids', rel, 'pids.max'), '20');
    assert.equal(read('cpu', rel, 'cpu.cfs_period_us'), '100000');
    assert.equal(read('cpu', rel, 'cpu.cfs_quota_us'), '50000');
    assert.equal(read('cpuset', rel, 'cpuset.cpus'), read('cpuset', '', 'cpuset.cpus'));
    assert.equal(read('cpuset', rel, 'cpuset.mems'), read('cpuset', '', 'cpuset.mems'));
    assert.equal(fs.existsSync(hier('freezer', rel)), true);
    assert.equal(fs.existsSync(hier('cpuacct', rel)), true);

    // memsw must stay ≥ limit at every step: raising and lowering both have to order the writes right.
    await cgroups().setLimits(rel, { memoryBytes: 256 * MB, pids: 30, cpus: 2 });
    assert.equal(read('memory', rel, 'memory.limit_in_bytes'), String(256 * MB));
    assert.equal(read('cpu', rel, 'cpu.cfs_quota_us'), '200000');
    await cgroups().setLimits(rel, { memoryBytes: 32 * MB, pids: 30, cpus: 0 });
    assert.equal(read('memory', rel, 'memory.limit_in_bytes'), String(32 * MB));
    assert.equal(read('cpu', rel, 'cpu.cfs_quota_us'), '-1');
    assert.equal(await cgroups().exists(rel), true);
    assert.deepEqual(await cgroups().children(PREFIX), ['limits']);
  });

  it('adds a process, lists it, freezes, thaws and kills it', async () => {
    const rel = `${PREFIX}/proc`;
    await cgroups().create(rel, { memoryBytes: 64 * MB, pids: 20, cpus: 1 });
    const sleeper = spawnTracked(['sleep', '60']);
    const pid = sleeper.pid as number;
    await cgroups().addProcess(rel, pid);
    assert.deepEqual(await cgroups().procs(rel), [pid]);
    assert.deepEqual(await cgroups().procs(PREFIX), [pid]); // recursive from the parent
    const own = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8');
    for (const c of ['memory', 'pids', 'freezer', 'cpuset']) {
      assert.match(own, new RegExp(`:${c}(,[a-z]+)?:/${rel}\\n`), own);
    }

    await cgroups().freeze(rel, 2_000);
    assert.equal(read('freezer', rel, 'freezer.state'), 'FROZEN');
    assert.equal(await cgroups().isFrozen(rel), true);
    await cgroups().thaw(rel);
    assert.equal(read('freezer', rel, 'freezer.state'), 'THAWED');
    assert.equal(await cgroups().isFrozen(rel), false);

    const stats = await cgroups().stats(rel);
    assert.equal(stats.pids, 1);
    assert.equal(stats.oomKills, 0);

    const exited = once(sleeper, 'exit');
    await cgroups().killAll(rel, 5_000);
    const [, signal] = await exited;
    assert.equal(signal, 'SIGKILL');
    assert.deepEqual(await cgroups().procs(rel), []);
  });

  it('OOM-kills a memory hog inside the group and counts it', async () => {
    const rel = `${PREFIX}/oom/work`;
    await cgroups().create(`${PREFIX}/oom`, { memoryBytes: 64 * MB, pids: 50, cpus: 1 });
    await cgroups().create(rel, { memoryBytes: 0, pids: 0, cpus: 0 }); // limits come from the parent
    const hog = spawnTracked([
      'python3',
      '-c',
      "import sys; sys.stdin.readline(); x = 'a' * (200 << 20); print('survived', flush=True)",
    ]);
    await cgroups().addProcess(rel, hog.pid as number);
    let out = '';
    hog.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const exited = once(hog, 'exit');
    hog.stdin?.end('go\n');
    const [code, signal] = await exited;
    assert.equal(signal, 'SIGKILL', `exit code ${code}, output '${out}'`);
    assert.equal(out, '');
    // Counted in the leaf on v1; stats() of the parent sums its descendants.
    assert.ok((await cgroups().stats(rel)).oomKills >= 1);
    const parent = await cgroups().stats(`${PREFIX}/oom`);
    assert.ok(parent.oomKills >= 1, `parent oomKills ${parent.oomKills}`);
    assert.ok(parent.memoryPeakBytes !== null && parent.memoryPeakBytes <= 64 * MB + 1 * MB);
  });

  it('pids.max = 20 stops a fork loop, and killAll kills the whole tree', async () => {
    const rel = `${PREFIX}/forks`;
    await cgroups().create(rel, { memoryBytes: 256 * MB, pids: 20, cpus: 1 });
    const script = [
      'import os, sys, time',
      'sys.stdin.readline()',
      'n = 0',
      'for i in range(100):',
      '    try:',
      '        pid = os.fork()',
      '    except OSError:',
      '        break',
      '    if pid == 0:',
      '        time.sleep(60)',
      '        os._exit(0)',
      '    n += 1',
      'print(n, flush=True)',
      'time.sleep(60)',
    ].join('\n');
    const bomb = spawnTracked(['python3', '-c', script]);
    await cgroups().addProcess(rel, bomb.pid as number);
    bomb.stdin?.end('go\n');
    const [line] = (await once(bomb.stdout as NodeJS.ReadableStream, 'data')) as [Buffer];
    const forked = Number(line.toString().trim());
    assert.equal(forked, 19, 'the parent plus 19 children reach pids.max = 20');
    const listed = await cgroups().procs(rel);
    assert.equal(listed.length, 20);
    const stats = await cgroups().stats(rel);
    assert.equal(stats.pids, 20);
    assert.ok(stats.cpuUsageNs > 0, `cpuUsageNs ${stats.cpuUsageNs}`); // the forking ran inside the group
    assert.ok(stats.memoryBytes > 0 && stats.memoryBytes < 256 * MB, `memoryBytes ${stats.memoryBytes}`);

    const exited = once(bomb, 'exit');
    await cgroups().killAll(rel, 5_000);
    await exited;
    assert.deepEqual(await cgroups().procs(rel), []);
    for (const pid of listed) {
      // Gone, or at most a zombie waiting for its (killed) parent's reaper.
      const stat = fs.existsSync(`/proc/${pid}/stat`) ? fs.readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
      assert.ok(stat === '' || / Z /.test(stat), `pid ${pid} still alive: ${stat}`);
    }
  });

  it('createGroup: limits where they apply, leaves only in freezer; a leaf move joins the group elsewhere', async () => {
    const rel = `${PREFIX}/sb`;
    await cgroups().createGroup(rel, { memoryBytes: 64 * MB, pids: 20, cpus: 0.5 }, ['agent', 'work']);
    await cgroups().createGroup(rel, { memoryBytes: 64 * MB, pids: 20, cpus: 0.5 }, ['agent', 'work']); // idempotent
    assert.equal(read('memory', rel, 'memory.limit_in_bytes'), String(64 * MB));
    assert.equal(read('pids', rel, 'pids.max'), '20');
    assert.equal(read('cpu', rel, 'cpu.cfs_quota_us'), '50000');
    assert.equal(fs.existsSync(hier('cpuacct', rel)), true);
    // A sandbox keeps its template's cpuset: no group there, and no leaf outside freezer.
    assert.equal(fs.existsSync(hier('cpuset', rel)), false);
    for (const c of ['memory', 'pids', 'cpu', 'cpuacct'] as const)
      assert.equal(fs.existsSync(hier(c, `${rel}/agent`)), false, `${c} has a leaf`);
    assert.deepEqual(await cgroups().children(rel), ['agent', 'work']);

    const sleeper = spawnTracked(['sleep', '60']);
    const pid = sleeper.pid as number;
    await cgroups().addProcess(`${rel}/agent`, pid);
    const own = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8');
    assert.match(own, new RegExp(`:freezer:/${rel}/agent\\n`), own);
    for (const c of ['memory', 'pids', 'cpu', 'cpuacct'])
      assert.match(own, new RegExp(`:${c}:/${rel}\\n`), own);
    assert.deepEqual(await cgroups().procs(`${rel}/agent`), [pid]);
    assert.deepEqual(await cgroups().procs(`${rel}/work`), []);
    assert.deepEqual(await cgroups().procs(rel), [pid]);

    // Freezing one leaf leaves the other running.
    await cgroups().freeze(`${rel}/work`, 2_000);
    assert.equal(await cgroups().isFrozen(`${rel}/agent`), false);
    await cgroups().thaw(`${rel}/work`);

    await cgroups().setCpuWeight(rel, 11);
    assert.equal(read('cpu', rel, 'cpu.shares'), String(11 * 1024));
    await cgroups().setCpuWeight(rel, 1);
    assert.equal(read('cpu', rel, 'cpu.shares'), '1024');

    await assert.rejects(cgroups().addProcess(`${PREFIX}/absent/leaf`, pid), { code: 'not_found' });
    await cgroups().killAll(rel, 5_000);
    await cgroups().destroy(rel);
    for (const c of ['memory', 'pids', 'cpu', 'cpuacct', 'freezer'] as const)
      assert.equal(fs.existsSync(hier(c, rel)), false, `${c} still has ${rel}`);
  });

  it('destroy removes the group from every controller', async () => {
    await cgroups().destroy(PREFIX);
    for (const c of ['memory', 'pids', 'cpu', 'cpuacct', 'cpuset', 'freezer'] as const) {
      assert.equal(fs.existsSync(hier(c, PREFIX)), false, `${c} still has ${PREFIX}`);
    }
    assert.equal(await cgroups().exists(PREFIX), false);
    await cgroups().destroy(PREFIX); // absent: no error
  });
});
