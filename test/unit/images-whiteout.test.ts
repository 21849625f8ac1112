import assert from 'node:assert/strict';
import { test } from 'node:test';
import { classifyWhiteout, planDirectory } from '../../src/images/whiteout.ts';

test('classifyWhiteout recognises whiteouts, opaque markers and ordinary names', () => {
  assert.deepEqual(classifyWhiteout('.wh.foo'), { kind: 'whiteout', target: 'foo' });
  assert.deepEqual(classifyWhiteout('.wh..hidden'), { kind: 'whiteout', target: '.hidden' });
  assert.deepEqual(classifyWhiteout('.wh..wh..opq'), { kind: 'opaque' });
  assert.deepEqual(classifyWhiteout('.wh..wh.plnk'), { kind: 'meta' });
  assert.equal(classifyWhiteout('foo'), null);
  assert.equal(classifyWhiteout('.whatever'), null);
  assert.equal(classifyWhiteout('x.wh.y'), null);
});

test('classifyWhiteout never targets the directory itself or its parent', () => {
  assert.deepEqual(classifyWhiteout('.wh.'), { kind: 'meta' });
  assert.deepEqual(classifyWhiteout('.wh..'), { kind: 'meta' });
  assert.deepEqual(classifyWhiteout('.wh...'), { kind: 'meta' });
});

test('planDirectory: devices for whiteouts, opaque for the marker, markers removed', () => {
  const plan = planDirectory('/l/etc', ['.wh.motd', 'passwd', '.wh..wh..opq', '.wh..wh.aufs', '.wh...']);
  assert.deepEqual(plan.devices, ['/l/etc/motd']);
  assert.deepEqual(plan.opaque, ['/l/etc']);
  assert.deepEqual(plan.remove.sort(), [
    '/l/etc/.wh...',
    '/l/etc/.wh..wh..opq',
    '/l/etc/.wh..wh.aufs',
    '/l/etc/.wh.motd',
  ]);
});

test('planDirectory: a whiteout whose target exists in the same layer is dropped, the entry wins', () => {
  const plan = planDirectory('/l', ['.wh.a', 'a', '.wh.b']);
  assert.deepEqual(plan.devices, ['/l/b']);
  assert.deepEqual(plan.remove.sort(), ['/l/.wh.a', '/l/.wh.b']);
  assert.deepEqual(plan.opaque, []);
});

test('planDirectory: no whiteouts, no work', () => {
  assert.deepEqual(planDirectory('/l', ['a', 'b', '.bashrc']), { remove: [], devices: [], opaque: [] });
});
