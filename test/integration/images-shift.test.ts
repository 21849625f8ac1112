import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { isForkboxError } from '../../src/domain/errors.ts';
import { shiftTree } from '../../src/images/index.ts';

const SHIFT = { hostStart: 100000, size: 65536 };
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function missing(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (chown to arbitrary ids)';
  for (const tool of ['getfattr', 'setfattr']) {
    if (spawnSync(tool, ['--version']).error) return `${tool} not installed (Debian package attr)`;
  }
  return undefined;
}

function sh(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

function getHex(path: string, name: string): string | undefined {
  const r = spawnSync('getfattr', ['-h', '-n', name, '-e', 'hex', '--absolute-names', path], {
    encoding: 'utf8',
  });
  if (r.status !== 0) return undefined;
  return /=0x([0-9a-f]+)/.exec(r.stdout)?.[1];
}

function le32(n: number): string {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b.toString('hex');
}

/** A v2 ACL: user::rwx, user:<uid>:r-x, group::r-x, mask::r-x, other::r-x. */
function aclWithUser(uid: number): string {
  const ent = (tag: number, perm: number, id: number) => {
    const b = Buffer.alloc(8);
    b.writeUInt16LE(tag, 0);
    b.writeUInt16LE(perm, 2);
    b.writeUInt32LE(id, 4);
    return b.toString('hex');
  };
  return `0x02000000${ent(1, 7, 0xffffffff)}${ent(2, 5, uid)}${ent(4, 5, 0xffffffff)}${ent(0x10, 5, 0xffffffff)}${ent(0x20, 5, 0xffffffff)}`;
}

test('shiftTree shifts owners, keeps special bits, links, capabilities and ACLs', async (t) => {
  const why = missing();
  if (why) return t.skip(why);
  const root = mkdtempSync(join(tmpdir(), 'fbx-shift-'));
  dirs.push(root);
  chownSync(root, 0, 0);
  const p = (rel: string) => join(root, rel);
  writeFileSync(p('rootfile'), 'r');
  chownSync(p('rootfile'), 0, 0);
  writeFileSync(p('userfile'), 'u');
  chownSync(p('userfile'), 1000, 1000);
  writeFileSync(p('suid'), '#!/bin/sh\n');
  chownSync(p('suid'), 0, 0);
  chmodSync(p('suid'), 0o4755);
  writeFileSync(p('sgid'), 'g');
  chownSync(p('sgid'), 0, 50);
  chmodSync(p('sgid'), 0o2755);
  symlinkSync('/etc/passwd', p('passwd-link'));
  const passwdBefore = statSync('/etc/passwd');
  mkdirSync(p('dir'));
  writeFileSync(p('dir/h1'), 'hard');
  linkSync(p('dir/h1'), p('h2'));
  chownSync(p('dir/h1'), 1000, 100);
  writeFileSync(p('capfile'), 'c');
  // v2, effective, permitted = CAP_NET_RAW (bit 13).
  sh('setfattr', [
    '-n',
    'security.capability',
    '-v',
    `0x${le32(0x02000001)}${le32(1 << 13)}${'00'.repeat(12)}`,
    p('capfile'),
  ]);
  writeFileSync(p('aclfile'), 'a');
  sh('setfattr', ['-n', 'system.posix_acl_access', '-v', aclWithUser(1000), p('aclfile')]);

  const res = await shiftTree(root, SHIFT);
  // root, rootfile, userfile, suid, sgid, passwd-link, dir, dir/h1 (h2 is the same inode), capfile, aclfile
  assert.equal(res.files, 10);

  const own = (rel: string) => {
    const st = lstatSync(p(rel));
    return [st.uid, st.gid];
  };
  assert.deepEqual(own(''), [100000, 100000]);
  assert.deepEqual(own('rootfile'), [100000, 100000]);
  assert.deepEqual(own('userfile'), [101000, 101000]);
  assert.deepEqual(own('suid'), [100000, 100000]);
  assert.equal(lstatSync(p('suid')).mode & 0o7777, 0o4755);
  assert.deepEqual(own('sgid'), [100000, 100050]);
  assert.equal(lstatSync(p('sgid')).mode & 0o7777, 0o2755);
  // The symlink itself moved; its host target did not.
  assert.deepEqual(own('passwd-link'), [100000, 100000]);
  const passwdAfter = statSync('/etc/passwd');
  assert.deepEqual(
    [passwdAfter.uid, passwdAfter.gid, passwdAfter.mode],
    [passwdBefore.uid, passwdBefore.gid, passwdBefore.mode],
  );
  // Hardlinks: still one inode, shifted exactly once.
  assert.equal(lstatSync(p('dir/h1')).ino, lstatSync(p('h2')).ino);
  assert.deepEqual(own('h2'), [101000, 100100]);
  // Capability: v3 with rootid 100000, same sets.
  assert.equal(
    getHex(p('capfile'), 'security.capability'),
    `${le32(0x03000001)}${le32(1 << 13)}${'00'.repeat(12)}${le32(100000)}`,
  );
  const getcap = spawnSync('getcap', [p('capfile')], { encoding: 'utf8' });
  // libcap agrees it is a well-formed capability set (this getcap does not print the rootid).
  if (!getcap.error) assert.match(getcap.stdout, /cap_net_raw=ep/);
  // ACL: the named user entry moved with the owners.
  assert.equal(`0x${getHex(p('aclfile'), 'system.posix_acl_access')}`, aclWithUser(101000));
});

test('shiftTree refuses ids above the range, naming the path, before changing anything', async (t) => {
  const why = missing();
  if (why) return t.skip(why);
  const root = mkdtempSync(join(tmpdir(), 'fbx-shift-'));
  dirs.push(root);
  chownSync(root, 0, 0);
  writeFileSync(join(root, 'ok'), 'x');
  chownSync(join(root, 'ok'), 0, 0);
  mkdirSync(join(root, 'sub'));
  writeFileSync(join(root, 'sub/big'), 'x');
  chownSync(join(root, 'sub/big'), 70000, 0);
  await assert.rejects(
    shiftTree(root, SHIFT),
    (e: unknown) =>
      isForkboxError(e) &&
      e.code === 'invalid_argument' &&
      e.message.includes(join(root, 'sub/big')) &&
      e.message.includes('70000'),
  );
  assert.equal(lstatSync(join(root, 'ok')).uid, 0);
  assert.equal(lstatSync(root).uid, 0);
});
