import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createSys, MNT_DETACH, MS, SysError, socketFd } from '../../src/runtimes/native/host/sys.ts';

const isRoot = process.getuid?.() === 0;

function mountInfoFor(target: string): string | undefined {
  const real = fs.realpathSync(target);
  return fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l.split(' ')[4] === real)
    .at(-1);
}

describe('sys: mount / umount2', () => {
  const sys = createSys();
  let dir = '';
  let src = '';
  let dst = '';
  const mounted: string[] = [];

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'forkbox-sys-'));
    src = path.join(dir, 'src');
    dst = path.join(dir, 'dst');
    fs.mkdirSync(src);
    fs.mkdirSync(dst);
    fs.writeFileSync(path.join(src, 'hello.txt'), 'hi from src');
  });

  after(() => {
    for (const m of mounted.reverse()) {
      try {
        sys.umount2(m, MNT_DETACH);
      } catch {}
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('bind-mounts, changes propagation, and detaches', (t) => {
    if (!isRoot) return t.skip('mount(2) needs root');
    sys.mount(src, dst, null, MS.BIND, null);
    mounted.push(dst);
    assert.equal(fs.readFileSync(path.join(dst, 'hello.txt'), 'utf8'), 'hi from src');

    sys.mount(null, dst, null, MS.SHARED, null);
    assert.match(mountInfoFor(dst) ?? '', / shared:\d+/);
    sys.mount(null, dst, null, MS.PRIVATE, null);
    assert.doesNotMatch(mountInfoFor(dst) ?? '', / shared:\d+/);

    sys.umount2(dst, MNT_DETACH);
    mounted.pop();
    assert.equal(fs.existsSync(path.join(dst, 'hello.txt')), false);
  });

  it('throws a SysError with errno, code and the target in the message', (t) => {
    if (!isRoot) return t.skip('mount(2) needs root');
    const missing = path.join(dir, 'does-not-exist');
    assert.throws(
      () => sys.mount(src, missing, null, MS.BIND, null),
      (e: unknown) => {
        assert.ok(e instanceof SysError);
        assert.equal(e.code, 'ENOENT');
        assert.equal(e.errno, 2);
        assert.match(e.message, /^mount\(/);
        assert.ok(e.message.includes(missing), e.message);
        return true;
      },
    );
    assert.throws(() => sys.umount2(src, 0), { code: 'EINVAL' }); // not a mount point
  });
});

describe('sys: tryLockExclusive', () => {
  const sys = createSys();
  let dir = '';
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'forkbox-lock-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('returns false while another process holds the lock, true once it is released', async () => {
    const file = path.join(dir, 'lock');
    fs.writeFileSync(file, '');
    const sysUrl = new URL('../../src/runtimes/native/host/sys.ts', import.meta.url).href;
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `import fs from 'node:fs'; const { createSys } = await import(${JSON.stringify(sysUrl)});
         const fd = fs.openSync(${JSON.stringify(file)}, 'r+');
         if (!createSys().tryLockExclusive(fd)) process.exit(3);
         process.stdout.write('locked\\n'); process.stdin.resume(); process.stdin.on('end', () => process.exit(0));`,
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    try {
      const [chunk] = (await once(child.stdout, 'data')) as [Buffer];
      assert.equal(chunk.toString().trim(), 'locked');
      const fd = fs.openSync(file, 'r+');
      try {
        assert.equal(sys.tryLockExclusive(fd), false);
        child.stdin.end();
        await once(child, 'exit');
        assert.equal(sys.tryLockExclusive(fd), true);
        assert.equal(sys.tryLockExclusive(fd), true); // re-locking our own lock succeeds
      } finally {
        fs.closeSync(fd);
      }
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('throws EBADF on a closed fd', () => {
    assert.throws(() => sys.tryLockExclusive(987654), { code: 'EBADF' });
  });
});

describe('sys: peerCred / socketFd', () => {
  const sys = createSys();
  let dir = '';
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'forkbox-cred-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("returns the connecting child's pid, uid and gid", async () => {
    const sockPath = path.join(dir, 's.sock');
    const server = net.createServer();
    server.listen(sockPath);
    await once(server, 'listening');
    const child = spawn(
      process.execPath,
      [
        '-e',
        `const s = require('node:net').connect(${JSON.stringify(sockPath)}); s.on('connect', () => {}); s.on('data', () => process.exit(0));`,
      ],
      { stdio: 'inherit' },
    );
    try {
      const [conn] = (await once(server, 'connection')) as [net.Socket];
      const fd = socketFd(conn);
      assert.ok(fd > 2);
      const cred = sys.peerCred(fd);
      assert.equal(cred.pid, child.pid);
      assert.equal(cred.uid, process.getuid?.());
      assert.equal(cred.gid, process.getgid?.());
      conn.end('bye');
      await once(child, 'exit');
      conn.destroy();
      assert.throws(() => socketFd(conn), /cannot get the file descriptor/);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      server.close();
    }
  });

  it('throws ENOTSOCK for a non-socket fd', () => {
    const fd = fs.openSync('/dev/null', 'r');
    try {
      assert.throws(() => sys.peerCred(fd), { code: 'ENOTSOCK' });
    } finally {
      fs.closeSync(fd);
    }
  });
});
