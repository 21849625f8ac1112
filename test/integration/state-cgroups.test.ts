/**
 * A state dir's cgroups (`forkbox/<state id>`, the parent of its sandboxes' and templates' groups) are
 * removed when its daemon stops with nothing left running, in every mounted hierarchy (those runc made
 * groups in without forkbox asking, `devices`, `blkio`, `systemd`, `unified`, too): without that, each state
 * dir a machine ever ran (every test run makes dozens) left its empty groups behind for good. A daemon
 * that stops leaving sandboxes running (a restart) keeps them.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { stateIdOf } from '../../src/runtimes/native/host/state-id.ts';
import { type Controller, controllerDir } from '../helpers/cgroup-files.ts';
import { nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();
const CONTROLLERS: Controller[] = ['memory', 'pids', 'cpu', 'cpuacct', 'freezer'];
const ROOT = '/sys/fs/cgroup';
/**
 * Every hierarchy mounted here (v1's each controller and named ones such as `systemd`, a hybrid host's
 * `unified`, or v2's one root): runc makes a sandbox's group in each, not only in those forkbox limits.
 */
function everyHierarchy(): string[] {
  if (existsSync(join(ROOT, 'cgroup.procs'))) return [ROOT];
  const dirs = readdirSync(ROOT, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(ROOT, e.name, 'cgroup.procs')))
    .map((e) => realpathSync(join(ROOT, e.name)));
  return [...new Set(dirs)];
}

describe("a state dir's own cgroups", { skip: skip ?? false }, () => {
  it('are gone once its daemon stopped with everything killed', async () => {
    const fx = await openNative();
    const group = `forkbox/${stateIdOf(fx.stateDir)}`;
    const id = (await fx.opened.api.createSandbox({})).id;
    assert.equal((await fx.opened.api.exec(id, { argv: ['true'] })).exitCode, 0);
    for (const c of CONTROLLERS) assert.ok(existsSync(controllerDir(c, `${group}/sandboxes/${id}`)), c);
    await fx.close();
    const left = everyHierarchy().filter((h) => existsSync(join(h, group)));
    assert.deepEqual(left, [], `${group} left in these hierarchies`);
  });
});
