import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import { describe, it } from 'node:test';
import { ForkboxError } from '../../src/domain/errors.ts';
import { createAdmission, formatBytes } from '../../src/runtimes/native/host/admission.ts';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

describe('admission', () => {
  const base = { hostMemoryBytes: 4 * GiB, minFreeDiskBytes: 1 * GiB, stateDir: os.tmpdir() };

  it('admits up to host memory × ratio (default 2) and refuses beyond, naming the numbers', () => {
    const a = createAdmission(base);
    assert.equal(a.memoryCapacityBytes, 8 * GiB);
    a.checkMemory(512 * MiB, 7.5 * GiB); // exactly at the limit is fine
    assert.throws(
      () => a.checkMemory(512 * MiB + 1, 7.5 * GiB),
      (e: unknown) => {
        assert.ok(e instanceof ForkboxError);
        assert.equal(e.code, 'resource_exhausted');
        assert.match(e.message, /512 MiB/);
        assert.match(e.message, /7\.5 GiB/);
        assert.match(e.message, /8 GiB/);
        assert.match(e.message, /overcommit ratio 2/);
        assert.match(e.message, /forkbox kill/);
        assert.match(e.message, /--memory/);
        assert.match(e.message, /FORKBOX_OVERCOMMIT_RATIO/);
        assert.equal(e.details?.limit, 'memory');
        assert.equal(e.details?.committedBytes, 7.5 * GiB);
        return true;
      },
    );
  });

  it('honours a custom ratio and rejects invalid ones', () => {
    const a = createAdmission({ ...base, overcommitRatio: 1 });
    a.checkMemory(4 * GiB, 0);
    assert.throws(() => a.checkMemory(1, 4 * GiB), { code: 'resource_exhausted' });
    assert.throws(() => createAdmission({ ...base, overcommitRatio: 0 }), { code: 'invalid_argument' });
    assert.throws(() => createAdmission({ ...base, overcommitRatio: Number.NaN }), {
      code: 'invalid_argument',
    });
  });

  it('refuses when free disk is below the minimum, naming the directory and numbers', async () => {
    const a = createAdmission({ ...base, freeDiskBytes: async () => 300 * MiB });
    await assert.rejects(a.checkDisk(), (e: unknown) => {
      assert.ok(e instanceof ForkboxError);
      assert.equal(e.code, 'resource_exhausted');
      assert.match(e.message, /300 MiB/);
      assert.match(e.message, /1 GiB/);
      assert.ok(e.message.includes(os.tmpdir()));
      assert.equal(e.details?.limit, 'disk');
      return true;
    });
    // check() runs memory first: a memory refusal wins even when disk is also short.
    await assert.rejects(
      a.check(16 * GiB, 0),
      (e: unknown) => e instanceof ForkboxError && e.details?.limit === 'memory',
    );
    const ok = createAdmission({ ...base, freeDiskBytes: async () => 2 * GiB });
    await ok.check(GiB, 0);
  });

  it('uses the real statfs of the state directory by default', async () => {
    const s = fs.statfsSync(os.tmpdir());
    const free = s.bavail * s.bsize;
    await createAdmission({ ...base, minFreeDiskBytes: 1 }).checkDisk();
    await assert.rejects(createAdmission({ ...base, minFreeDiskBytes: free * 4 + GiB }).checkDisk(), {
      code: 'resource_exhausted',
    });
    await assert.rejects(createAdmission({ ...base, stateDir: '/nonexistent/forkbox' }).checkDisk(), {
      code: 'unavailable',
    });
  });

  it('formats bytes readably', () => {
    assert.equal(formatBytes(512), '512 B');
    assert.equal(formatBytes(1536 * MiB), '1.5 GiB');
  });
});
