import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { isForkboxError } from '../../src/domain/errors.ts';
import { createProgressParser } from '../../src/images/debootstrap.ts';
import { readXattrsTree, setXattr, shiftAcl, shiftCapability, writeXattrs } from '../../src/images/xattr.ts';
import type { ProgressEvent } from '../../src/service/api.ts';
import { getXattr, listXattrs } from '../../src/util/fs-calls.ts';

const SHIFT = 100000;
const SIZE = 65536;

function capV2(perm: number, effective: boolean): Buffer {
  const b = Buffer.alloc(20);
  b.writeUInt32LE(0x02000000 | (effective ? 1 : 0), 0);
  b.writeUInt32LE(perm, 4);
  return b;
}

test('v2 capability becomes v3 with rootid = shifted root, keeping sets and the effective flag', () => {
  const out = shiftCapability(capV2(0x2000, true), SHIFT, SIZE, '/x');
  assert.equal(out.length, 24);
  assert.equal(out.readUInt32LE(0), 0x03000001);
  assert.equal(out.readUInt32LE(4), 0x2000);
  assert.equal(out.readUInt32LE(20), SHIFT);
});

test('v1 capability becomes v3; v3 rootid is shifted; a rootid out of range is refused', () => {
  const v1 = Buffer.alloc(12);
  v1.writeUInt32LE(0x01000000, 0);
  v1.writeUInt32LE(0x400, 4);
  const o1 = shiftCapability(v1, SHIFT, SIZE, '/a');
  assert.equal(o1.readUInt32LE(0), 0x03000000);
  assert.equal(o1.readUInt32LE(4), 0x400);
  assert.equal(o1.readUInt32LE(20), SHIFT);

  const v3 = Buffer.alloc(24);
  v3.writeUInt32LE(0x03000000, 0);
  v3.writeUInt32LE(1000, 20);
  assert.equal(shiftCapability(v3, SHIFT, SIZE, '/b').readUInt32LE(20), SHIFT + 1000);
  v3.writeUInt32LE(70000, 20);
  assert.throws(
    () => shiftCapability(v3, SHIFT, SIZE, '/c'),
    (e: unknown) => isForkboxError(e) && e.message.includes('/c') && e.message.includes('70000'),
  );
  assert.throws(
    () => shiftCapability(Buffer.from([1, 2, 3, 4, 5]), SHIFT, SIZE, '/d'),
    /malformed security.capability/,
  );
});

test('ACL: named user/group entries shift, owner/mask/other entries keep their undefined id', () => {
  const entries: [number, number, number][] = [
    [0x01, 7, 0xffffffff],
    [0x02, 6, 1000],
    [0x04, 5, 0xffffffff],
    [0x08, 4, 50],
    [0x10, 7, 0xffffffff],
    [0x20, 5, 0xffffffff],
  ];
  const b = Buffer.alloc(4 + entries.length * 8);
  b.writeUInt32LE(2, 0);
  entries.forEach(([tag, perm, id], i) => {
    b.writeUInt16LE(tag, 4 + i * 8);
    b.writeUInt16LE(perm, 6 + i * 8);
    b.writeUInt32LE(id, 8 + i * 8);
  });
  const out = shiftAcl(b, SHIFT, SIZE, '/f', 'system.posix_acl_access');
  const ids = entries.map((_, i) => out.readUInt32LE(8 + i * 8));
  assert.deepEqual(ids, [0xffffffff, SHIFT + 1000, 0xffffffff, SHIFT + 50, 0xffffffff, 0xffffffff]);
  b.writeUInt32LE(65536, 8 + 8);
  assert.throws(() => shiftAcl(b, SHIFT, SIZE, '/f', 'system.posix_acl_access'), /\/f: ACL user id 65536/);
});

test('xattrs of a tree are read and written back by path, odd names included, symlinks not followed', async () => {
  const root = mkdtempSync(join(tmpdir(), 'fb-xattr-'));
  try {
    const weird = join(root, 'a b\nc\\d é');
    mkdirSync(join(root, 'sub'));
    writeFileSync(weird, 'x');
    writeFileSync(join(root, 'sub', 'plain'), 'y');
    symlinkSync(weird, join(root, 'link'));
    await writeXattrs(
      new Map([
        [weird, new Map([['user.one', Buffer.from('0100', 'hex')]])],
        [join(root, 'sub'), new Map([['user.two', Buffer.from('y')]])],
      ]),
    );
    setXattr(join(root, 'sub', 'plain'), 'user.other', Buffer.from('z'));
    const got = await readXattrsTree(root, ['user.one', 'user.two']);
    assert.deepEqual([...got.keys()].sort(), [weird, join(root, 'sub')].sort());
    assert.equal(got.get(weird)?.get('user.one')?.toString('hex'), '0100');
    assert.equal(got.get(join(root, 'sub'))?.get('user.two')?.toString(), 'y');
    // Only the names asked for, and the link is not read through to its target.
    assert.equal(got.has(join(root, 'sub', 'plain')), false);
    assert.equal(got.has(join(root, 'link')), false);
    assert.deepEqual(listXattrs(join(root, 'sub', 'plain')), ['user.other']);
    assert.equal(getXattr(join(root, 'sub', 'plain'), 'user.none'), null);
    assert.equal(getXattr(join(root, 'link'), 'user.one', { follow: true })?.toString('hex'), '0100');
    assert.throws(() => getXattr(join(root, 'missing'), 'user.one'), { code: 'ENOENT' });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('debootstrap progress parser reports phases with running counts', () => {
  const events: ProgressEvent[] = [];
  const parse = createProgressParser((e) => events.push(e));
  for (const l of [
    'I: Retrieving InRelease ',
    'I: Retrieving libc6 2.36-9',
    'I: Validating libc6 2.36-9',
    'W: something',
    'I: Retrieving bash 5.2.15-2',
    'I: Validating bash 5.2.15-2',
    'I: Extracting base-files...',
    'I: Unpacking bash...',
    'I: Configuring bash...',
    'I: Configuring libc-bin...',
  ]) {
    parse(l);
  }
  assert.deepEqual(
    events.map((e) => [e.phase, e.current]),
    [
      ['indexes', 1],
      ['downloading', 1],
      ['downloading', 1],
      ['downloading', 2],
      ['downloading', 2],
      ['extracting', 1],
      ['unpacking', 1],
      ['configuring', 1],
      ['configuring', 2],
    ],
  );
  assert.equal(events[1]?.message, 'Retrieving libc6 2.36-9');
});
