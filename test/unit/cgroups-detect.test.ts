import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ForkboxError } from '../../src/domain/errors.ts';
import { detectCgroups, resolveV1Mounts } from '../../src/runtimes/native/cgroups/index.ts';

function hierarchy(dir: string) {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'cgroup.procs'), '');
}

describe('detectCgroups (fake roots)', () => {
  let root = '';
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'forkbox-cgd-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('picks v2 when the root is a unified hierarchy with memory, pids and cpu', () => {
    fs.writeFileSync(path.join(root, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
    assert.equal(detectCgroups({ root }).kind, 'v2');
  });

  it('refuses a v2 root without the memory controller, with a fix', () => {
    fs.writeFileSync(path.join(root, 'cgroup.controllers'), 'cpu pids\n');
    assert.throws(
      () => detectCgroups({ root }),
      (e: unknown) => {
        assert.ok(e instanceof ForkboxError);
        assert.equal(e.code, 'requirement_missing');
        assert.match(e.message, /lacks controller\(s\) memory/);
        assert.match(e.message, /Fix:/);
        return true;
      },
    );
  });

  it('picks v1 on a hybrid host whose unified mount is empty, resolving cpu,cpuacct co-mounts', () => {
    for (const c of ['memory', 'pids', 'cpuset', 'freezer', 'cpu,cpuacct', 'devices'])
      hierarchy(path.join(root, c));
    fs.symlinkSync('cpu,cpuacct', path.join(root, 'cpu'));
    fs.symlinkSync('cpu,cpuacct', path.join(root, 'cpuacct'));
    fs.mkdirSync(path.join(root, 'unified'));
    fs.writeFileSync(path.join(root, 'unified', 'cgroup.controllers'), '');
    assert.equal(detectCgroups({ root }).kind, 'v1');
    const { dirs, missing } = resolveV1Mounts(root);
    assert.deepEqual(missing, []);
    assert.equal(dirs.get('cpu'), dirs.get('cpuacct'));
    assert.equal(dirs.get('cpu'), fs.realpathSync(path.join(root, 'cpu,cpuacct')));
  });

  it('finds a co-mount without symlinks too', () => {
    for (const c of ['memory', 'pids', 'cpuset', 'freezer', 'cpu,cpuacct']) hierarchy(path.join(root, c));
    const { dirs, missing } = resolveV1Mounts(root);
    assert.deepEqual(missing, []);
    assert.equal(path.basename(dirs.get('cpuacct') ?? ''), 'cpu,cpuacct');
  });

  it('uses a hybrid unified mount that carries the controllers when v1 lacks them', () => {
    hierarchy(path.join(root, 'memory'));
    fs.mkdirSync(path.join(root, 'unified'));
    fs.writeFileSync(path.join(root, 'unified', 'cgroup.controllers'), 'memory pids cpu\n');
    const cg = detectCgroups({ root });
    assert.equal(cg.kind, 'v2');
  });

  it('throws requirement_missing naming what is missing when nothing works', () => {
    hierarchy(path.join(root, 'memory'));
    fs.mkdirSync(path.join(root, 'freezer')); // an empty directory is not a mounted hierarchy
    assert.throws(
      () => detectCgroups({ root }),
      (e: unknown) => {
        assert.ok(e instanceof ForkboxError);
        assert.equal(e.code, 'requirement_missing');
        assert.match(e.message, /pids/);
        assert.match(e.message, /freezer/);
        assert.match(e.message, /run forkbox as root/);
        return true;
      },
    );
  });
});
