import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ForkboxError } from '../../src/domain/errors.ts';
import { createCgroupsV2 } from '../../src/runtimes/native/cgroups/index.ts';
import { waitFor } from '../helpers/wait-for.ts';

const MB = 1024 * 1024;
const ALL = 'cpuset cpu io memory hugetlb pids rdma misc';

/** Create a directory with the files the kernel would put in a v2 cgroup (root or not). */
function fakeGroup(
  dir: string,
  opts: { controllers?: string; root?: boolean; kill?: boolean; peak?: boolean } = {},
) {
  fs.mkdirSync(dir, { recursive: true });
  const files: Record<string, string> = {
    'cgroup.controllers': `${opts.controllers ?? ALL}\n`,
    'cgroup.subtree_control': '',
    'cgroup.procs': '',
  };
  if (!opts.root) {
    Object.assign(files, {
      'cgroup.events': 'populated 0\nfrozen 0\n',
      'cgroup.freeze': '0\n',
      'memory.max': 'max\n',
      'memory.swap.max': 'max\n',
      'memory.current': '0\n',
      'memory.events': 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n',
      'pids.max': 'max\n',
      'pids.current': '0\n',
      'cpu.max': 'max 100000\n',
      'cpu.weight': '100\n',
      'cpu.stat': 'usage_usec 0\nuser_usec 0\nsystem_usec 0\n',
    });
    if (opts.kill !== false) files['cgroup.kill'] = '';
    if (opts.peak !== false) files['memory.peak'] = '0\n';
  }
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
}

describe('cgroups v2 (fake tree)', () => {
  let root = '';
  const read = (rel: string, f: string) => fs.readFileSync(path.join(root, rel, f), 'utf8');
  const write = (rel: string, f: string, text: string) => fs.writeFileSync(path.join(root, rel, f), text);

  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'forkbox-cg2-'));
    fakeGroup(root, { root: true });
    fakeGroup(path.join(root, 'forkbox'));
    fakeGroup(path.join(root, 'forkbox/sandboxes'));
    fakeGroup(path.join(root, 'forkbox/sandboxes/sb-abc'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('create enables controllers in every ancestor and writes the limits', async () => {
    write('', 'cgroup.subtree_control', 'cpuset memory pids\n'); // already partly enabled at the root
    const cg = createCgroupsV2({ root });
    assert.equal(cg.kind, 'v2');
    await cg.create('forkbox/sandboxes/sb-abc', { memoryBytes: 512 * MB, pids: 256, cpus: 1.5 });
    assert.equal(read('', 'cgroup.subtree_control'), '+cpu'); // only the missing one
    assert.equal(read('forkbox', 'cgroup.subtree_control'), '+memory +pids +cpu');
    assert.equal(read('forkbox/sandboxes', 'cgroup.subtree_control'), '+memory +pids +cpu');
    assert.equal(read('forkbox/sandboxes/sb-abc', 'cgroup.subtree_control'), ''); // the leaf holds processes
    const g = 'forkbox/sandboxes/sb-abc';
    assert.equal(read(g, 'memory.max'), String(512 * MB));
    assert.equal(read(g, 'memory.swap.max'), '0');
    assert.equal(read(g, 'pids.max'), '256');
    assert.equal(read(g, 'cpu.max'), '150000 100000');
  });

  it('createGroup makes the limited group and its leaves, delegating the controllers to the leaves', async () => {
    const cg = createCgroupsV2({ root });
    const g = 'forkbox/sandboxes/sb-abc';
    await cg.createGroup(g, { memoryBytes: 64 * MB, pids: 32, cpus: 1 }, ['agent', 'repl', 'work']);
    assert.equal(read(g, 'memory.max'), String(64 * MB));
    assert.equal(read(g, 'pids.max'), '32');
    // Processes live in the leaves, so the group hands its controllers down to them.
    assert.equal(read(g, 'cgroup.subtree_control'), '+memory +pids +cpu');
    assert.deepEqual(await cg.children(g), ['agent', 'repl', 'work']);
    await assert.rejects(cg.createGroup(g, { memoryBytes: MB, pids: 1, cpus: 1 }, ['../x']), {
      code: 'invalid_argument',
    });
  });

  it('setCpuWeight scales cpu.weight from the default 100, within 1..10000', async () => {
    const cg = createCgroupsV2({ root });
    const g = 'forkbox/sandboxes/sb-abc';
    await cg.setCpuWeight(g, 11);
    assert.equal(read(g, 'cpu.weight'), '1100');
    await cg.setCpuWeight(g, 1000);
    assert.equal(read(g, 'cpu.weight'), '10000');
    await cg.setCpuWeight(g, 1);
    assert.equal(read(g, 'cpu.weight'), '100');
  });

  it('setLimits writes "max" for unlimited values and skips memory.swap.max when absent', async () => {
    const g = 'forkbox/sandboxes/sb-abc';
    fs.rmSync(path.join(root, g, 'memory.swap.max'));
    const cg = createCgroupsV2({ root });
    await cg.setLimits(g, { memoryBytes: 0, pids: 0, cpus: 0 });
    assert.equal(read(g, 'memory.max'), 'max');
    assert.equal(read(g, 'pids.max'), 'max');
    assert.equal(read(g, 'cpu.max'), 'max 100000');
    assert.equal(fs.existsSync(path.join(root, g, 'memory.swap.max')), false);
  });

  it('create refuses with requirement_missing when a controller is not available', async () => {
    write('forkbox', 'cgroup.controllers', 'cpu pids\n');
    const cg = createCgroupsV2({ root });
    await assert.rejects(
      cg.create('forkbox/sandboxes/sb-abc', { memoryBytes: MB, pids: 1, cpus: 1 }),
      (e) => {
        assert.ok(e instanceof ForkboxError);
        assert.equal(e.code, 'requirement_missing');
        assert.match(e.message, /memory/);
        assert.match(e.message, /subtree_control/);
        return true;
      },
    );
  });

  it('write errors name the file, the value, the errno and what to do', async () => {
    const cg = createCgroupsV2({ root });
    await assert.rejects(cg.addProcess('forkbox/nope', 1234), (e) => {
      assert.ok(e instanceof ForkboxError);
      assert.equal(e.code, 'not_found');
      assert.ok(e.message.includes(path.join(root, 'forkbox/nope/cgroup.procs')), e.message);
      assert.match(e.message, /'1234'/);
      assert.match(e.message, /ENOENT/);
      assert.match(e.message, /create the group first/);
      return true;
    });
  });

  it('rejects group paths that could escape the hierarchy', async () => {
    const cg = createCgroupsV2({ root });
    for (const bad of ['../etc', 'a/../../b', '/abs', '', 'a//b', 'a/.']) {
      await assert.rejects(cg.exists(bad), { code: 'invalid_argument' }, bad);
    }
  });

  it('addProcess writes the pid; procs is recursive over sub-groups', async () => {
    const g = 'forkbox/sandboxes/sb-abc';
    fakeGroup(path.join(root, g, 'work'));
    const cg = createCgroupsV2({ root });
    await cg.addProcess(g, 4242);
    assert.equal(read(g, 'cgroup.procs'), '4242');
    write(`${g}/work`, 'cgroup.procs', '77\n5\n');
    assert.deepEqual(await cg.procs(g), [5, 77, 4242]);
    assert.deepEqual(await cg.children(g), ['work']);
    assert.deepEqual(await cg.children('forkbox/sandboxes'), ['sb-abc']);
    assert.equal(await cg.exists(g), true);
    assert.equal(await cg.exists('forkbox/other'), false);
  });

  it('freeze waits until cgroup.events says frozen, thaw writes 0', async () => {
    const g = 'forkbox/sandboxes/sb-abc';
    const cg = createCgroupsV2({ root });
    let settled = false;
    const p = cg.freeze(g, 2_000).then(() => {
      settled = true;
    });
    await waitFor(() => read(g, 'cgroup.freeze') === '1', { what: 'freeze writes cgroup.freeze' });
    assert.equal(settled, false, 'freeze must wait for frozen 1');
    assert.equal(await cg.isFrozen(g), false);
    write(g, 'cgroup.events', 'populated 1\nfrozen 1\n'); // what the kernel does once every task stopped
    await p;
    assert.equal(await cg.isFrozen(g), true);
    await cg.thaw(g);
    assert.equal(read(g, 'cgroup.freeze'), '0');
  });

  it('a freeze that never settles thaws again and throws a timeout error', async () => {
    const g = 'forkbox/sandboxes/sb-abc';
    const cg = createCgroupsV2({ root });
    await assert.rejects(cg.freeze(g, 100), (e) => {
      assert.ok(e instanceof ForkboxError);
      assert.equal(e.code, 'timeout');
      assert.match(e.message, /did not finish within 100 ms; the group was thawed again/);
      assert.deepEqual(e.details, { cgroup: g, timeoutMs: 100 });
      return true;
    });
    assert.equal(read(g, 'cgroup.freeze'), '0');
  });

  it('stats reads memory, peak, cpu, pids and oom kills', async () => {
    const g = 'forkbox/sandboxes/sb-abc';
    write(g, 'memory.current', '1048576\n');
    write(g, 'memory.peak', '2097152\n');
    write(g, 'cpu.stat', 'usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n');
    write(g, 'pids.current', '7\n');
    write(g, 'memory.events', 'low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\noom_group_kill 0\n');
    const cg = createCgroupsV2({ root });
    assert.deepEqual(await cg.stats(g), {
      memoryBytes: 1048576,
      memoryPeakBytes: 2097152,
      cpuUsageNs: 1_500_000,
      pids: 7,
      oomKills: 2,
    });
    fs.rmSync(path.join(root, g, 'memory.peak')); // kernels before 5.19
    assert.equal((await cg.stats(g)).memoryPeakBytes, null);
  });

  it('killAll writes cgroup.kill when present and waits until empty', async () => {
    const g = 'forkbox/sandboxes/sb-abc';
    const cg = createCgroupsV2({ root });
    write(g, 'cgroup.procs', '999999999\n'); // a pid that cannot exist: killing it is a no-op
    setTimeout(() => write(g, 'cgroup.procs', ''), 80); // the kernel empties the group
    await cg.killAll(g, 2_000);
    assert.equal(read(g, 'cgroup.kill'), '1');
  });

  it('killAll without cgroup.kill freezes, SIGKILLs every process and thaws', async () => {
    const g = 'forkbox/sandboxes/sb-abc';
    fs.rmSync(path.join(root, g, 'cgroup.kill'));
    write(g, 'cgroup.events', 'populated 1\nfrozen 1\n');
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      write(g, 'cgroup.procs', `${sleeper.pid}\n`);
      const exited = once(sleeper, 'exit').then((r) => {
        write(g, 'cgroup.procs', '');
        return r;
      });
      await cg(root).killAll(g, 3_000);
      assert.deepEqual(await exited, [null, 'SIGKILL']);
      assert.equal(read(g, 'cgroup.freeze'), '0');
    } finally {
      if (sleeper.exitCode === null && sleeper.signalCode === null) sleeper.kill('SIGKILL');
    }
  });

  it('killAll reports a timeout naming the survivors', async () => {
    const g = 'forkbox/sandboxes/sb-abc';
    write(g, 'cgroup.procs', '999999999\n');
    await assert.rejects(cg(root).killAll(g, 100), (e) => {
      assert.ok(e instanceof ForkboxError);
      assert.equal(e.code, 'timeout');
      assert.match(e.message, /999999999/);
      return true;
    });
  });

  it('destroy removes children first, and an absent group is not an error', async () => {
    // rmdir only works on empty plain directories; cgroupfs lets it remove control files implicitly.
    const bare = path.join(root, 'bare');
    fs.mkdirSync(path.join(bare, 'sb/agent'), { recursive: true });
    fs.mkdirSync(path.join(bare, 'sb/work'), { recursive: true });
    const c = cg(root);
    await c.destroy('bare/sb');
    assert.equal(fs.existsSync(path.join(bare, 'sb')), false);
    assert.equal(fs.existsSync(bare), true);
    await c.destroy('bare/sb');
    await c.destroy('never/existed');
  });
});

function cg(root: string) {
  return createCgroupsV2({ root });
}
