/**
 * runtime-admission.ts: what the native runtime asks of the host before it makes sandboxes — the daemon's
 * fds first (a refusal counted), then memory with the live sandboxes' limits, then the free disk beyond what
 * loop images may still take, then the children's disk limits against the storage's room.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ForkboxError } from '../../src/domain/errors.ts';
import type { Admission, AdmissionRequest, DiskRoom } from '../../src/runtimes/native/host/admission.ts';
import { createAdmit } from '../../src/runtimes/native/runtime-admission.ts';

const MiB = 1024 * 1024;

function recorder() {
  const memory: AdmissionRequest[] = [];
  const disk: unknown[] = [];
  const admission = {
    memoryCapacityBytes: 0,
    checkMemory: async (req: AdmissionRequest) => void memory.push(req),
    checkDisk: async (promised?: number) => void disk.push({ promised }),
    checkDiskLimits: (limits: number[], room: DiskRoom) => void disk.push({ limits, room }),
  } satisfies Admission;
  return { admission, memory, disk };
}

const child = (memMb: number, diskMb: number) => ({
  limits: { memoryBytes: memMb * MiB, diskBytes: diskMb * MiB },
});

test('sums the new and the live limits for memory, then the free disk less what is promised, then the disk limits together', async () => {
  const r = recorder();
  const live = new Map([
    ['a', { memoryBytes: 100 * MiB }],
    ['b', { memoryBytes: 300 * MiB }],
  ]);
  const admit = createAdmit({
    admission: r.admission,
    snapshots: { free: () => ({ bytes: 0, where: 'x', reserved: true }), hostPromised: () => 7 * MiB },
    live,
  });
  await admit([child(64, 10), child(128, 20)]);
  assert.deepEqual(r.memory, [{ count: 2, limitBytes: 192 * MiB, committedLimitBytes: 400 * MiB }]);
  assert.deepEqual(r.disk, [
    { promised: 7 * MiB },
    { limits: [10 * MiB, 20 * MiB], room: { bytes: 0, where: 'x', reserved: true } },
  ]);
});

test('an fd refusal is counted and nothing else is asked', async () => {
  const r = recorder();
  const refused: string[] = [];
  const admit = createAdmit({
    admission: r.admission,
    snapshots: { free: () => ({ bytes: 0, where: 'x', reserved: false }), hostPromised: () => 0 },
    live: new Map(),
    fds: {
      reserve: 0,
      usage: () => ({ open: 0, limit: 0, reserve: 0 }) as never,
      check() {
        throw new ForkboxError('resource_exhausted', 'no fds');
      },
    },
    counters: { admissionRefused: (why: string) => void refused.push(why) } as never,
  });
  await assert.rejects(admit([child(64, 0)]), /no fds/);
  assert.deepEqual(refused, ['fds']);
  assert.deepEqual(r.memory, []);
});
