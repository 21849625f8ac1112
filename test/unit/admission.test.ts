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
    await a.check(req(100, GiB, 0));
    await a.check(req(1, GiB, 47 * GiB));
    // 1000 idle default sandboxes' limits fit under the default ceiling on a 24 GiB host
    await a.check(req(1, GiB, 999 * GiB));
    assert.equal(a.memoryCapacityBytes, 24 * GiB * DEFAULT_OVERCOMMIT_RATIO);
  });

  it('refuses under memory pressure, naming the pressure and what to do', async () => {
    const refused: string[] = [];
    const a = createAdmission({
      ...base,
      memoryState: host(20 * GiB, 37.5),
      onRefused: (r) => refused.push(r),
    });
    await assert.rejects(a.check(req(1)), (e: unknown) => {
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
    await createAdmission({ ...base, memoryState: host(20 * GiB, 9) }).check(req(1));
    await createAdmission({ ...base, memoryState: host(20 * GiB, null) }).check(req(1));
  });

  it('refuses when MemAvailable would drop under the floor, counting each new sandbox', async () => {
    const a = createAdmission({
      ...base,
      memoryState: host(2 * GiB),
      perSandboxBytes: 32 * MiB,
      minAvailableBytes: 1 * GiB,
      sandboxesUseBytes: async () => 700 * MiB,
    });
    await a.check(req(32)); // 1 GiB needed, 1 GiB left
    await assert.rejects(a.check(req(33)), (e: unknown) => {
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
    await a.check(req(1, GiB, 3 * GiB));
    await assert.rejects(a.check(req(1, GiB + 1, 3 * GiB)), (e: unknown) => {
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
    // check() runs memory first: a memory refusal wins even when disk is also short.
    const both = createAdmission({ ...base, memoryState: host(20 * GiB, 99), freeDiskBytes: async () => 0 });
    await assert.rejects(
      both.check(req(1)),
      (e: unknown) => e instanceof ForkboxError && e.details?.limit === 'memory',
    );
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
