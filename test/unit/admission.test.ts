import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import { describe, it } from 'node:test';
import { ForkboxError } from '../../src/domain/errors.ts';
import { createAdmission, DEFAULT_OVERCOMMIT_RATIO } from '../../src/runtimes/native/host/admission.ts';
import {
  parseMemAvailable,
  parsePsiFull10,
  readMemoryState,
} from '../../src/runtimes/native/host/memory-state.ts';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

/** A host with `available` MemAvailable and PSI `full avg10` at `pressure` (the injectable source). */
const host =
  (available: number, pressure: number | null = 0) =>
  () => ({
    availableBytes: available,
    pressureFull10: pressure,
  });

describe('admission by real use', () => {
  const base = {
    hostMemoryBytes: 24 * GiB,
    minFreeDiskBytes: 1 * GiB,
    stateDir: os.tmpdir(),
    freeDiskBytes: async () => 100 * GiB,
  };
  const req = (count: number, limitEach = GiB, committed = 0) => ({
    count,
    limitBytes: count * limitEach,
    committedLimitBytes: committed,
  });

  it('admits 100 forks of 1 GiB limit each and a 48th 1 GiB sandbox when the host has the memory', async () => {
    const a = createAdmission({ ...base, memoryState: host(20 * GiB) });
    await a.checkMemory(req(100, GiB, 0));
    await a.checkMemory(req(1, GiB, 47 * GiB));
    // 1000 idle default sandboxes' limits fit under the default ceiling on a 24 GiB host
    await a.checkMemory(req(1, GiB, 999 * GiB));
    assert.equal(a.memoryCapacityBytes, 24 * GiB * DEFAULT_OVERCOMMIT_RATIO);
  });

  it('refuses under memory pressure, naming the pressure and what to do', async () => {
    const refused: string[] = [];
    const a = createAdmission({
      ...base,
      memoryState: host(20 * GiB, 37.5),
      onRefused: (r) => refused.push(r),
    });
    await assert.rejects(a.checkMemory(req(1)), (e: unknown) => {
      assert.ok(e instanceof ForkboxError);
      assert.equal(e.code, 'resource_exhausted');
      assert.match(e.message, /memory pressure/);
      assert.match(e.message, /37\.5%/);
      assert.match(e.message, /forkbox kill/);
      assert.equal(e.details?.reason, 'memory_pressure');
      return true;
    });
    assert.deepEqual(refused, ['memory_pressure']);
    // below the bound (and without PSI) it admits
    await createAdmission({ ...base, memoryState: host(20 * GiB, 9) }).checkMemory(req(1));
    await createAdmission({ ...base, memoryState: host(20 * GiB, null) }).checkMemory(req(1));
  });

  it('refuses when MemAvailable would drop under the floor, counting each new sandbox', async () => {
    const a = createAdmission({
      ...base,
      memoryState: host(2 * GiB),
      perSandboxBytes: 32 * MiB,
      minAvailableBytes: 1 * GiB,
      sandboxesUseBytes: async () => 700 * MiB,
    });
    await a.checkMemory(req(32)); // 1 GiB needed, 1 GiB left
    await assert.rejects(a.checkMemory(req(33)), (e: unknown) => {
      assert.ok(e instanceof ForkboxError);
      assert.equal(e.details?.reason, 'memory_available');
      assert.match(e.message, /MemAvailable is 2 GiB/);
      assert.match(e.message, /use 700 MiB/);
      return true;
    });
  });

  it('keeps a configurable ceiling on the sum of limits', async () => {
    const a = createAdmission({
      ...base,
      hostMemoryBytes: 4 * GiB,
      overcommitRatio: 1,
      memoryState: host(3 * GiB),
    });
    await a.checkMemory(req(1, GiB, 3 * GiB));
    await assert.rejects(a.checkMemory(req(1, GiB + 1, 3 * GiB)), (e: unknown) => {
      assert.ok(e instanceof ForkboxError);
      assert.equal(e.details?.reason, 'memory_limits');
      assert.match(e.message, /overcommit ratio 1/);
      assert.match(e.message, /FORKBOX_OVERCOMMIT_RATIO/);
      return true;
    });
    assert.throws(() => createAdmission({ ...base, overcommitRatio: 0 }), { code: 'invalid_argument' });
    assert.throws(() => createAdmission({ ...base, overcommitRatio: Number.NaN }), {
      code: 'invalid_argument',
    });
  });

  it('refuses when free disk is below the minimum, naming the directory and numbers', async () => {
    const a = createAdmission({ ...base, memoryState: host(20 * GiB), freeDiskBytes: async () => 300 * MiB });
    await assert.rejects(a.checkDisk(), (e: unknown) => {
      assert.ok(e instanceof ForkboxError);
      assert.equal(e.code, 'resource_exhausted');
      assert.match(e.message, /300 MiB/);
      assert.match(e.message, /1 GiB/);
      assert.ok(e.message.includes(os.tmpdir()));
      assert.equal(e.details?.limit, 'disk');
      return true;
    });
    // What loop images may still write is set aside: 2 GiB free less 1.5 GiB promised is under 1 GiB.
    const roomy = createAdmission({ ...base, freeDiskBytes: async () => 2 * GiB });
    await roomy.checkDisk(512 * MiB);
    await assert.rejects(roomy.checkDisk(1.5 * GiB), (e: unknown) => {
      assert.ok(e instanceof ForkboxError);
      assert.match(e.message, /512 MiB free .* once the 1\.5 GiB that live sandboxes' disks may still write/);
      assert.equal(e.details?.promisedBytes, 1.5 * GiB);
      return true;
    });
  });

  it('admits reserved disk limits together and shared ones each alone', () => {
    const refused: string[] = [];
    const a = createAdmission({ ...base, onRefused: (r) => refused.push(r) });
    const reserved = { bytes: 3.4 * GiB, where: 'the images’ filesystem', reserved: true };
    // Three 1 GiB images against 3.4 GiB, 1 GiB kept free: two fit, three do not.
    a.checkDiskLimits([GiB, GiB], reserved);
    assert.throws(
      () => a.checkDiskLimits([GiB, GiB, GiB], reserved),
      (e: unknown) => {
        assert.ok(e instanceof ForkboxError);
        assert.equal(e.code, 'resource_exhausted');
        assert.match(
          e.message,
          /these 3 sandboxes ask for 3 GiB but only 2\.4 GiB is left .* promised in full/,
        );
        assert.equal(e.details?.reserved, true);
        return true;
      },
    );
    assert.deepEqual(refused, ['disk']);
    // Shared (btrfs quotas): each limit alone against what is free; 0 = no limit asks nothing.
    const shared = { bytes: 3.4 * GiB, where: 'btrfs', reserved: false };
    a.checkDiskLimits([3 * GiB, 3 * GiB, 3 * GiB, 0], shared);
    assert.throws(
      () => a.checkDiskLimits([4 * GiB], shared),
      /asks for 4 GiB but only 3\.4 GiB is free on btrfs/,
    );
    a.checkDiskLimits([0, 0], { bytes: 0, where: 'x', reserved: true });
  });

  it('uses the real statfs of the state directory by default', async () => {
    const s = fs.statfsSync(os.tmpdir());
    const free = s.bavail * s.bsize;
    const { freeDiskBytes: _, ...real } = base;
    await createAdmission({ ...real, minFreeDiskBytes: 1 }).checkDisk();
    await assert.rejects(createAdmission({ ...real, minFreeDiskBytes: free * 4 + GiB }).checkDisk(), {
      code: 'resource_exhausted',
    });
    await assert.rejects(createAdmission({ ...real, stateDir: '/nonexistent/forkbox' }).checkDisk(), {
      code: 'unavailable',
    });
  });

  it('reads MemAvailable and PSI', () => {
    assert.equal(parseMemAvailable('MemTotal: 100 kB\nMemAvailable:    2048 kB\n'), 2 * MiB);
    assert.equal(parseMemAvailable('MemTotal: 100 kB\n'), null);
    assert.equal(
      parsePsiFull10(
        'some avg10=1.50 avg60=0.00 avg300=0.00 total=1\nfull avg10=0.75 avg60=0.00 avg300=0.00 total=1\n',
      ),
      0.75,
    );
    const st = readMemoryState();
    assert.ok(st.availableBytes > 0 && st.availableBytes <= os.totalmem());
  });
});
