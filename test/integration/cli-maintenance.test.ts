/**
 * `forkbox df` and `forkbox gc` through the real CLI (`bin/forkbox.js` as a child process) against real
 * daemons: df's figures are the allocated bytes of what exists (measured here by `du`, independently of
 * the daemon), and gc removes the leftovers planted in its own state dir (a sandbox dir, an inbox, a
 * cgroup of a sandbox its store never knew) while a second daemon on another --state-dir, with a running
 * sandbox and a leftover of its own, is left untouched.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { detectCgroups } from '../../src/runtimes/native/cgroups/index.ts';
import type { DiskUsage, GcReport, SandboxInfo } from '../../src/service/api.ts';
import { sandboxCgroupDirsLeft, sandboxCgroupRel } from '../helpers/cgroup-files.ts';
import { type Cli, cliFor } from '../helpers/cli.ts';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { defaultImage, makeStateDir, nativeUnavailable } from '../helpers/native.ts';

const skip = nativeUnavailable();

/** Allocated bytes of a tree, each inode once: what df reports, measured by coreutils. */
function du(path: string): number {
  return Number(execFileSync('du', ['-s', '--block-size=1', path], { encoding: 'utf8' }).split('\t')[0]);
}

describe('CLI df and gc against real daemons', { skip: skip ?? false }, () => {
  let a: { dir: string; daemon?: ServedDaemon; cli: Cli };
  let b: { dir: string; daemon?: ServedDaemon; cli: Cli };
  const LEFTOVER = 'sb-leftover0';

  before(async () => {
    const dirA = makeStateDir();
    const dirB = makeStateDir();
    a = { dir: dirA, daemon: await startServe(dirA), cli: cliFor(dirA) };
    b = { dir: dirB, daemon: await startServe(dirB), cli: cliFor(dirB) };
  });
  after(async () => {
    // A leftover cgroup gc failed to remove would outlive both state dirs.
    const cg = detectCgroups();
    for (const dir of [a?.dir, b?.dir])
      if (dir && existsSync(join(dir, 'state-id'))) await cg.destroy(sandboxCgroupRel(dir, LEFTOVER));
    await stopServeAndClean(a?.daemon?.child, a?.dir);
    await stopServeAndClean(b?.daemon?.child, b?.dir);
  });

  it('df: images are their layers, sandboxes their dirs, the total the state dir', () => {
    const { id: big } = a.cli.json<SandboxInfo>('create');
    const { id: small } = a.cli.json<SandboxInfo>('create');
    a.cli.ok('exec', big, '--', 'dd', 'if=/dev/urandom', 'of=/root/blob', 'bs=1M', 'count=4', 'status=none');
    // Frozen, nothing in them writes while df and du look.
    a.cli.ok('pause', big);
    a.cli.ok('pause', small);

    const d = a.cli.json<DiskUsage>('df');
    assert.equal(d.stateDir, a.dir);
    const image = defaultImage();
    assert.deepEqual(d.images, [{ name: image.name, bytes: image.layers.reduce((n, l) => n + du(l), 0) }]);
    assert.deepEqual(
      d.sandboxes.map((s) => s.id).sort(),
      readdirSync(join(a.dir, 'sandboxes')).sort(),
      'one entry per sandbox dir',
    );
    assert.deepEqual(d.sandboxes.map((s) => s.id).sort(), [big, small].sort());
    for (const s of d.sandboxes) assert.equal(s.bytes, du(join(a.dir, 'sandboxes', s.id)), s.id);
    const bytesOf = (id: string) => d.sandboxes.find((s) => s.id === id)?.bytes ?? 0;
    assert.ok(bytesOf(big) >= bytesOf(small) + 4 * 1024 * 1024, 'the 4 MiB written count in its sandbox');
    assert.ok(d.totalBytes >= bytesOf(big) + bytesOf(small), 'the state dir holds its sandboxes');

    // The table form names each and the total.
    const text = a.cli.ok('df');
    for (const id of [big, small]) assert.match(text, new RegExp(`^sandbox\\s+${id}\\s`, 'm'));
    assert.match(text, new RegExp(`^image\\s+${image.name}\\s`, 'm'));
    assert.match(text, new RegExp(`^total .* in ${a.dir}$`, 'm'));

    a.cli.ok('kill', big);
    a.cli.ok('kill', small);
    assert.deepEqual(a.cli.json<DiskUsage>('df').sandboxes, [], 'a killed sandbox’s disk is released');
  });

  it('gc removes leftovers in its own state dir only; the other daemon’s sandbox keeps running', async () => {
    const mine = a.cli.json<SandboxInfo>('create');
    const theirs = b.cli.json<SandboxInfo>('create');
    b.cli.ok('exec', theirs.id, '--', 'sh', '-c', 'echo kept > /root/kept.txt');

    // What a crash mid-create leaves: a sandbox dir with data, its inbox, its cgroup — in both state dirs.
    const cg = detectCgroups();
    for (const dir of [a.dir, b.dir]) {
      mkdirSync(join(dir, 'sandboxes', LEFTOVER, 'upper', 'root'), { recursive: true });
      writeFileSync(join(dir, 'sandboxes', LEFTOVER, 'upper', 'root', 'junk'), 'x'.repeat(65536));
      mkdirSync(join(dir, 'inbox', LEFTOVER), { recursive: true });
      await cg.create(sandboxCgroupRel(dir, LEFTOVER));
      assert.notDeepEqual(sandboxCgroupDirsLeft(dir, LEFTOVER), [], 'the planted cgroup exists');
    }

    const report = a.cli.json<GcReport>('gc');
    assert.deepEqual(report.removedSandboxes, []);
    assert.deepEqual(report.removedMounts, []);
    assert.deepEqual(report.removedCgroups, [sandboxCgroupRel(a.dir, LEFTOVER)]);
    assert.deepEqual(
      [...report.removedDirs].sort(),
      [join(a.dir, 'inbox', LEFTOVER), join(a.dir, 'sandboxes', LEFTOVER)].sort(),
    );
    assert.equal(existsSync(join(a.dir, 'sandboxes', LEFTOVER)), false);
    assert.equal(existsSync(join(a.dir, 'inbox', LEFTOVER)), false);
    assert.deepEqual(sandboxCgroupDirsLeft(a.dir, LEFTOVER), [], 'its leftover cgroup is gone everywhere');

    // A's live sandbox is kept whole.
    assert.ok(existsSync(join(a.dir, 'sandboxes', mine.id)));
    assert.notDeepEqual(sandboxCgroupDirsLeft(a.dir, mine.id), []);
    assert.equal(a.cli.ok('exec', mine.id, '--', 'echo', 'a'), 'a\n');

    // B's state dir is not A's business: its leftovers and its running sandbox stay as they were.
    assert.equal(JSON.stringify(report).includes(b.dir), false, JSON.stringify(report));
    assert.equal(JSON.stringify(report).includes(theirs.id), false, JSON.stringify(report));
    assert.equal(
      readFileSync(join(b.dir, 'sandboxes', LEFTOVER, 'upper', 'root', 'junk'), 'utf8').length,
      65536,
    );
    assert.ok(existsSync(join(b.dir, 'inbox', LEFTOVER)));
    assert.notDeepEqual(sandboxCgroupDirsLeft(b.dir, LEFTOVER), []);
    assert.notDeepEqual(sandboxCgroupDirsLeft(b.dir, theirs.id), []);
    assert.equal(b.cli.json<SandboxInfo>('inspect', theirs.id).state, 'running');
    assert.equal(b.cli.ok('exec', theirs.id, '--', 'cat', '/root/kept.txt'), 'kept\n');

    // Nothing is left for a second run, which says so in words.
    assert.match(a.cli.ok('gc'), /^removed 0 sandbox\(es\), 0 mount\(s\), 0 cgroup\(s\), 0 dir\(s\)$/m);

    // B's own gc takes its own leftovers, and still not its running sandbox.
    const bReport = b.cli.json<GcReport>('gc');
    assert.deepEqual(bReport.removedCgroups, [sandboxCgroupRel(b.dir, LEFTOVER)]);
    assert.equal(existsSync(join(b.dir, 'sandboxes', LEFTOVER)), false);
    assert.equal(b.cli.ok('exec', theirs.id, '--', 'cat', '/root/kept.txt'), 'kept\n');
  });
});
