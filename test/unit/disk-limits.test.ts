/** Disk limits: the `SIZE[,INODES]` notation, the daemon's policy and the check of one request. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isForkboxError } from '../../src/domain/errors.ts';
import { parseCount, parseDiskSpec } from '../../src/domain/sizes.ts';
import { DEFAULT_DISK_POLICY, diskLimitsFrom, diskPolicy } from '../../src/service/sandboxes/disk-limits.ts';
import { limitsFrom } from '../../src/service/validate.ts';

const MiB = 1024 * 1024;
const code = (c: string) => (e: unknown) => isForkboxError(e) && e.code === c;

describe('disk limit notation', () => {
  it('reads SIZE and SIZE,INODES', () => {
    assert.deepEqual(parseDiskSpec('2g'), { bytes: 2 * 1024 * MiB });
    assert.deepEqual(parseDiskSpec('512m,100k'), { bytes: 512 * MiB, inodes: 100_000 });
    assert.deepEqual(parseDiskSpec('1.5g,1m'), { bytes: 1.5 * 1024 * MiB, inodes: 1_000_000 });
    assert.equal(parseCount('2500'), 2500);
  });
  it('refuses what is not a limit, saying how to write one', () => {
    for (const bad of ['', ',100k', '2g,', '2g,1k,3', 'lots', '2g,-1', '2g,1x']) {
      if (bad === '2g,') continue; // an empty inode part means "bytes only"
      assert.throws(
        () => parseDiskSpec(bad),
        (e: unknown) => code('invalid_argument')(e),
        bad,
      );
    }
    assert.deepEqual(parseDiskSpec('2g,'), { bytes: 2 * 1024 * MiB });
  });
});

describe('disk limits of a request', () => {
  it('takes the default when none is asked, and the request when it is in range', () => {
    assert.deepEqual(diskLimitsFrom({}), {
      diskBytes: DEFAULT_DISK_POLICY.defaultBytes,
      diskInodes: DEFAULT_DISK_POLICY.defaultInodes,
    });
    assert.deepEqual(diskLimitsFrom({ diskMb: 64, diskInodes: 5000 }), {
      diskBytes: 64 * MiB,
      diskInodes: 5000,
    });
    const l = limitsFrom({ memoryMb: 256, diskMb: 100 });
    assert.equal(l.diskBytes, 100 * MiB);
    assert.equal(l.memoryBytes, 256 * MiB);
  });
  it('refuses limits out of range, naming the range and the setting that sets it', () => {
    const policy = diskPolicy({ enforced: true, max: { bytes: 1024 * MiB, inodes: 50_000 } });
    assert.throws(
      () => diskLimitsFrom({ diskMb: 2048 }, policy),
      (e: unknown) =>
        code('invalid_argument')(e) && /16 to 1024 MiB.*FORKBOX_DISK_MAX/.test((e as Error).message),
    );
    assert.throws(() => diskLimitsFrom({ diskInodes: 60_000 }, policy), code('invalid_argument'));
    assert.throws(() => diskLimitsFrom({ diskMb: 8 }, policy), code('invalid_argument'));
    assert.throws(() => diskLimitsFrom({ diskMb: 1.5 }, policy), code('invalid_argument'));
  });
  it('lowers the built-in default under a lower maximum, and refuses an explicit default above it', () => {
    const p = diskPolicy({ enforced: true, max: { bytes: 1024 * MiB, inodes: 50_000 } });
    assert.deepEqual([p.defaultBytes, p.defaultInodes], [1024 * MiB, 50_000]);
    assert.throws(
      () => diskPolicy({ enforced: true, defaults: { bytes: 4096 * MiB }, max: { bytes: 1024 * MiB } }),
      code('invalid_argument'),
    );
  });
  it('without enforcement: no limit by default, and asking for one is refused', () => {
    const off = diskPolicy({ enforced: false });
    assert.deepEqual(diskLimitsFrom({}, off), { diskBytes: 0, diskInodes: 0 });
    assert.throws(() => diskLimitsFrom({ diskMb: 64 }, off), code('requirement_missing'));
  });
});
