/**
 * A state dir's cgroups (`forkbox/<state id>`, the parent of its sandboxes' and templates' groups) are
 * removed when its daemon stops with nothing left running, in every hierarchy: without that, each state
 * dir a machine ever ran (every test run makes dozens) left its empty groups behind for good. A daemon
 * that stops leaving sandboxes running (a restart) keeps them.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { stateIdOf } from '../../src/runtimes/native/host/state-id.ts';
import { type Controller, controllerDir } from '../helpers/cgroup-files.ts';
import { nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();
const CONTROLLERS: Controller[] = ['memory', 'pids', 'cpu', 'cpuacct', 'freezer'];

describe("a state dir's own cgroups", { skip: skip ?? false }, () => {
  it('are gone once its daemon stopped with everything killed', async () => {
    const fx = await openNative();
    const group = `forkbox/${stateIdOf(fx.stateDir)}`;
    const id = (await fx.opened.api.createSandbox({})).id;
    assert.equal((await fx.opened.api.exec(id, { argv: ['true'] })).exitCode, 0);
    for (const c of CONTROLLERS) assert.ok(existsSync(controllerDir(c, `${group}/sandboxes/${id}`)), c);
    await fx.close();
    const left = CONTROLLERS.filter((c) => existsSync(controllerDir(c, group)));
    assert.deepEqual(left, [], `${group} left in these hierarchies`);
  });
});
