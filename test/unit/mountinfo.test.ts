/** util/mountinfo.ts: the one mountinfo parser, read against this host's own mount table. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { isMountPoint, mountsUnder, readMountInfo } from '../../src/util/mountinfo.ts';

test('reads this process mount table: / and /proc with their filesystem types', () => {
  const all = readMountInfo();
  assert.equal(all.length, readFileSync('/proc/self/mountinfo', 'utf8').trim().split('\n').length);
  assert.ok(all.some((m) => m.mountPoint === '/'));
  assert.equal(all.find((m) => m.mountPoint === '/proc')?.fsType, 'proc');
  assert.ok(isMountPoint('/proc'));
  assert.equal(isMountPoint('/proc/self'), false);
});

test('mountsUnder lists a prefix and what is below it, deepest first, not its look-alike siblings', () => {
  const under = mountsUnder('/proc/');
  assert.equal(under.at(-1), '/proc');
  assert.ok(under.every((m) => m === '/proc' || m.startsWith('/proc/')));
  for (let i = 1; i < under.length; i++) assert.ok((under[i - 1] ?? '').length >= (under[i] ?? '').length);
  assert.deepEqual(mountsUnder('/pro'), []);
});
