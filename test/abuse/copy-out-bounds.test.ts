/**
 * Attack: copying out of a sandbox without bounds, and special files in a transfer's path (issue #11
 * item 8): `forkbox cp` turned a sparse 1 GiB file into 1 GiB on the host, a file growing while copied
 * streamed without end, and a FIFO swapped in for an upload's temp file hung the agent forever.
 * Precedent: `docker cp` and `kubectl cp` following what the container controls (CVE-2019-14271,
 * CVE-2018-1002100), GNU tar/cp `--sparse` (a sparse file expanded on copy fills the disk), and the
 * classic FIFO-in-place-of-a-file hang of privileged readers (e.g. logrotate/systemd-tmpfiles advisories).
 *
 * Contained when: a sparse file stays sparse on the host; a copy stops at the size the file had when it
 * was opened, however it grows meanwhile; past the copy's byte limit the copy fails clearly and leaves no
 * partial file; a FIFO swapped in during a download or an upload is refused with an error naming it,
 * and the agent answers the next request.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isForkboxError } from '../../src/domain/errors.ts';
import { type AbuseDaemon, startDaemon } from '../helpers/abuse.ts';
import { type Cli, cliFor } from '../helpers/cli.ts';
import { nativeUnavailable } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/**
 * In the sandbox: every time `argv[1]` is read (inotify IN_ACCESS), append 16 MiB to it, up to 256 MiB
 * in all. A copy that chases the file's current size reads what it provoked, and so on: it only ends at
 * the cap. A copy bounded by the size at open ends at once.
 */
const GROWER = `
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init()
assert libc.inotify_add_watch(fd, sys.argv[1].encode(), 0x1) >= 0
open("/tmp/grower-ready", "w").close()
added = 0
while added < 256 << 20:
    os.read(fd, 65536)
    with open(sys.argv[1], "ab") as f:
        f.write(b"g" * (16 << 20))
    added += 16 << 20
`;

/**
 * In the sandbox: watch /tmp/up; whenever a \`.forkbox-upload-*\` regular file appears or is written
 * (moved in, closed after a write), put a FIFO in its place (no reader: an open for writing that
 * blocks would block forever) and record it.
 */
const SWAPPER = `
import ctypes, os, stat, struct
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init()
assert libc.inotify_add_watch(fd, b"/tmp/up", 0x8 | 0x80 | 0x2) >= 0
open("/tmp/swapper-ready", "w").close()
while True:
    buf = os.read(fd, 65536)
    i = 0
    while i < len(buf):
        wd, mask, cookie, n = struct.unpack_from("iIII", buf, i)
        name = buf[i + 16:i + 16 + n].rstrip(b"\\0").decode()
        i += 16 + n
        p = "/tmp/up/" + name
        if name.startswith(".forkbox-upload-"):
            try:
                if stat.S_ISREG(os.lstat(p).st_mode):
                    os.unlink(p)
                    os.mkfifo(p)
                    open("/tmp/swapped", "a").write(name + "\\n")
            except OSError:
                pass
`;

describe('abuse: copy out without bounds, special files in transfers', {
  skip: nativeUnavailable() ?? false,
}, () => {
  let d: AbuseDaemon;
  let cli: Cli;
  let id: string;
  let host: string;

  const sh = async (cmd: string) => {
    const r = await d.api.exec(id, { cmd });
    assert.equal(r.exitCode, 0, `${cmd}: ${r.stderr}`);
    return r.stdout;
  };
  const agentAnswers = async () => assert.equal(await sh('echo alive'), 'alive\n');
  const refusedAsFifo = (e: unknown) => {
    assert.ok(isForkboxError(e), String(e));
    assert.equal(e.code, 'invalid_argument', e.message);
    assert.match(e.message, /FIFO.*not a regular file/);
    return true;
  };

  before(async () => {
    d = await startDaemon();
    cli = cliFor(d.stateDir);
    id = (await d.api.createSandbox({})).id;
    host = mkdtempSync(join(tmpdir(), 'forkbox-cp-out-'));
  });
  after(async () => {
    if (host) rmSync(host, { recursive: true, force: true });
    await d?.stop();
  });

  it('a sparse 1 GiB file stays sparse on the host, byte for byte where it has data', async () => {
    await sh(
      "python3 -c \"f=open('/tmp/sparse','wb'); f.truncate(1<<30); f.seek(1<<20); f.write(b'abc'); f.seek((1<<30)-10); f.write(b'end')\"",
    );
    const dst = join(host, 'sparse');
    cli.ok('cp', `${id}:/tmp/sparse`, dst);
    const st = statSync(dst);
    assert.equal(st.size, GiB);
    assert.ok(st.blocks * 512 < 4 * MiB, `the copy allocates ${st.blocks * 512} bytes on the host`);
    const fh = readFileSync(dst);
    assert.equal(fh.subarray(MiB, MiB + 3).toString(), 'abc');
    assert.equal(fh.subarray(GiB - 10, GiB - 7).toString(), 'end');
    assert.equal(
      fh.subarray(0, MiB).some((b) => b !== 0),
      false,
    );
  });

  it('a file growing while it is copied is copied as it was at open, and the copy ends', async () => {
    await sh('head -c 16777216 /dev/urandom > /tmp/grow');
    const before = await sh('sha256sum < /tmp/grow');
    await d.api.startExec(id, { argv: ['python3', '-c', GROWER, '/tmp/grow'] });
    await waitFor(async () => (await d.api.exec(id, { cmd: 'test -e /tmp/grower-ready' })).exitCode === 0, {
      what: 'the grower watches /tmp/grow',
      timeoutMs: 30_000,
    });
    const dst = join(host, 'grow');
    cli.ok('cp', `${id}:/tmp/grow`, dst);
    const copied = readFileSync(dst);
    assert.equal(copied.length, 16 * MiB);
    assert.equal(`${createHash('sha256').update(copied).digest('hex')}  -\n`, before);
    const grown = Number(await sh('stat -c %s /tmp/grow'));
    assert.ok(grown > 16 * MiB, 'the file grew while it was copied');
  });

  it('past the byte limit the copy fails clearly and leaves no partial file', async () => {
    await sh('head -c 3145728 /dev/urandom > /tmp/big');
    const dst = join(host, 'big');
    const stderr = cli.fails(5, 'cp', '--max-size', '1m', `${id}:/tmp/big`, dst);
    assert.match(stderr, /limit of 1048576 bytes.*--max-size/);
    assert.equal(existsSync(dst), false);
    cli.ok('cp', '--max-size', '4m', `${id}:/tmp/big`, dst);
    assert.equal(statSync(dst).size, 3 * MiB);
  });

  it('a FIFO is refused, not waited on: copied out, and swapped in between two reads of a download', async () => {
    await sh('mkfifo /tmp/fifo');
    const stderr = cli.fails(2, 'cp', `${id}:/tmp/fifo`, join(host, 'fifo'));
    assert.match(stderr, /FIFO.*not a regular file/);
    await agentAnswers();

    // The host end too: a FIFO as the source of an upload or the destination of a download.
    const hostFifo = join(host, 'host-fifo');
    execFileSync('mkfifo', [hostFifo]);
    assert.match(cli.fails(2, 'cp', hostFifo, `${id}:/tmp/from-fifo`), /host-fifo on this host is a FIFO/);
    assert.match(cli.fails(2, 'cp', `${id}:/etc/hostname`, hostFifo), /host-fifo on this host is a FIFO/);

    await sh('head -c 25165824 /dev/urandom > /tmp/dl');
    const first = await d.api.readFile(id, '/tmp/dl', { offset: 0, length: 8 * MiB });
    assert.equal(first.data.length, 8 * MiB);
    await sh('rm /tmp/dl && mkfifo /tmp/dl');
    await assert.rejects(d.api.readFile(id, '/tmp/dl', { offset: 8 * MiB, length: 8 * MiB }), refusedAsFifo);
    // A reader holds the FIFO open, so opening it without blocking succeeds: fstat still refuses it.
    await d.api.startExec(id, {
      argv: [
        'python3',
        '-c',
        'import os,time; os.open("/tmp/dl", os.O_RDONLY|os.O_NONBLOCK); time.sleep(600)',
      ],
    });
    await assert.rejects(d.api.readFile(id, '/tmp/dl'), refusedAsFifo);
    await assert.rejects(d.api.writeFile(id, '/tmp/dl', Buffer.from('x'), { append: true }), refusedAsFifo);
    await agentAnswers();
  });

  it('a FIFO swapped in for an upload temp file is refused and the agent still answers', async () => {
    await sh('mkdir -p /tmp/up');
    await d.api.startExec(id, { argv: ['python3', '-c', SWAPPER] });
    await waitFor(async () => (await d.api.exec(id, { cmd: 'test -e /tmp/swapper-ready' })).exitCode === 0, {
      what: 'the swapper watches /tmp/up',
      timeoutMs: 30_000,
    });
    // 40 MiB: five 8 MiB chunks to `.forkbox-upload-<hex>`, four appends the swapper can get in front of.
    const data = randomBytes(40 * MiB);
    await assert.rejects(d.api.writeFile(id, '/tmp/up/target', data), refusedAsFifo);
    assert.match(await sh('cat /tmp/swapped'), /^\.forkbox-upload-/);
    await agentAnswers();
    assert.equal((await d.api.exec(id, { cmd: 'test -e /tmp/up/target' })).exitCode, 1, 'no target written');
  });
});
