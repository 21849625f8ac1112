/**
 * Attack: fill the host's disk from inside a sandbox (issue #11 item 6: 5 GB written in a sandbox landed
 * on the host disk). Precedent: container writable layers without a size limit — Docker's overlay2
 * driver has no quota unless `--storage-opt size` on XFS project quotas, and Kubernetes evicts pods on
 * ephemeral-storage pressure because one container can fill a node's disk.
 *
 * Contained when: writing past the sandbox's disk limit fails inside with ENOSPC or EDQUOT, the host
 * stores no more than the limit for it, the sandbox keeps working once it deletes, forks and snapshot
 * restores keep the limit, and a limit that cannot fit is refused with the numbers. Run on both storage
 * drivers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isForkboxError } from '../../src/domain/errors.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { allocatedBytes, fillProgram, hostFileOf, MiB, parseOutcome } from '../helpers/disk.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const LIMIT_MB = 64;
/** Metadata the filesystem keeps outside the sandbox's account (checksums, extent trees). */
const SLACK = 16 * MiB;
const FULL = /^(ENOSPC|EDQUOT)$/;

for (const storage of ['btrfs', 'copy'] as const) {
  describe(`disk fill (${storage} driver)`, () => {
    let fx: NativeFixture;
    let api: ForkboxApi;

    before(async () => {
      const why = nativeUnavailable();
      if (why) throw new Error(`this test needs the native runtime: ${why}`);
      fx = await openNative({ storage });
      api = fx.opened.api;
      const caps = (await api.status()).capabilities;
      assert.equal(caps.limits.disk, true, `the ${storage} driver must enforce disk limits on this host`);
    });
    after(async () => {
      await fx?.close();
    });

    it('stops writes at the limit, costs the host no more, and works again after deleting', async () => {
      const sb = await api.createSandbox({ diskMb: LIMIT_MB });
      assert.equal(sb.limits.diskBytes, LIMIT_MB * MiB);
      const hostFile = hostFileOf(fx.stateDir, storage, sb.id);
      const before = allocatedBytes(hostFile);
      const fill = await api.exec(sb.id, { argv: fillProgram('/fill', LIMIT_MB * 4), timeoutSeconds: 300 });
      const out = parseOutcome(fill.stdout);
      assert.match(
        out.err,
        FULL,
        `writing 4x the limit must fail with ENOSPC or EDQUOT: ${fill.stdout}${fill.stderr}`,
      );
      assert.ok(out.n <= LIMIT_MB, `wrote ${out.n} MiB into a ${LIMIT_MB} MiB limit`);
      await api.exec(sb.id, { argv: ['sync'] });
      const grew = allocatedBytes(hostFile) - before;
      assert.ok(grew <= LIMIT_MB * MiB + SLACK, `the host stored ${grew} bytes for a ${LIMIT_MB} MiB limit`);

      const usage = (await api.getSandbox(sb.id, { usage: true })).usage;
      assert.ok(usage, 'usage is reported');
      assert.ok(usage.diskBytes >= (out.n - 2) * MiB, `usage ${usage.diskBytes} bytes after ${out.n} MiB`);
      assert.ok(usage.diskBytes <= LIMIT_MB * MiB + SLACK);
      if (storage === 'copy') assert.equal(typeof usage.diskInodes, 'number');
      else assert.equal(usage.diskInodes, null);

      // Deleting frees the space: the sandbox writes again.
      assert.equal((await api.exec(sb.id, { argv: ['rm', '/fill'] })).exitCode, 0);
      const again = parseOutcome(
        (await api.exec(sb.id, { argv: fillProgram('/again', LIMIT_MB / 2), timeoutSeconds: 300 })).stdout,
      );
      assert.deepEqual(again, { n: LIMIT_MB / 2, err: 'none' });
      assert.equal((await api.exec(sb.id, { argv: ['echo', 'alive'] })).stdout, 'alive\n');
    });

    it('keeps the limit in forks and snapshot restores, each counting only its own writes', async () => {
      const src = await api.createSandbox({ diskMb: LIMIT_MB });
      const seed = parseOutcome((await api.exec(src.id, { argv: fillProgram('/seed', 40) })).stdout);
      assert.deepEqual(seed, { n: 40, err: 'none' });

      const fork = await api.forkSandbox(src.id, { n: 1 });
      const child = fork.children[0]?.sandbox;
      assert.ok(child, JSON.stringify(fork.children));
      assert.equal(child.limits.diskBytes, LIMIT_MB * MiB, 'a fork inherits the disk limit');
      const inChild = parseOutcome(
        (await api.exec(child.id, { argv: fillProgram('/more', LIMIT_MB * 4), timeoutSeconds: 300 })).stdout,
      );
      assert.match(inChild.err, FULL, JSON.stringify(inChild));
      // The 40 MiB it inherited are in its parent's frozen layer: its own limit is for its own writes.
      assert.ok(inChild.n > 40 - 8 && inChild.n <= LIMIT_MB, `child wrote ${inChild.n} MiB`);

      const lower = await api.forkSandbox(src.id, { n: 1, diskMb: 32 });
      const small = lower.children[0]?.sandbox;
      assert.ok(small);
      assert.equal(small.limits.diskBytes, 32 * MiB, 'a fork can be given its own limit');
      const inSmall = parseOutcome(
        (await api.exec(small.id, { argv: fillProgram('/more', 128), timeoutSeconds: 300 })).stdout,
      );
      assert.match(inSmall.err, FULL);
      assert.ok(inSmall.n <= 32, `wrote ${inSmall.n} MiB under a 32 MiB limit`);

      const snap = await api.createSnapshot(src.id);
      const restored = await api.restoreSnapshot(snap.id, { n: 1 });
      const r = restored.children[0]?.sandbox;
      assert.ok(r, JSON.stringify(restored.children));
      assert.equal(r.limits.diskBytes, LIMIT_MB * MiB, 'a restore keeps the limit');
      const inRestored = parseOutcome(
        (await api.exec(r.id, { argv: fillProgram('/more', LIMIT_MB * 4), timeoutSeconds: 300 })).stdout,
      );
      assert.match(inRestored.err, FULL);
      assert.ok(inRestored.n <= LIMIT_MB);
    });

    it('refuses a disk limit that cannot fit, naming the numbers', async () => {
      await assert.rejects(
        api.createSandbox({ diskMb: 1024 * 1024 }),
        (e: unknown) =>
          isForkboxError(e) &&
          e.code === 'resource_exhausted' &&
          /asks for 1 TiB but only [\d.]+ [KMGT]?i?B is (free|left)/.test(e.message),
      );
      await assert.rejects(
        api.createSandbox({ diskMb: 4 * 1024 * 1024 }),
        (e: unknown) => isForkboxError(e) && e.code === 'invalid_argument' && /disk_mb/.test(e.message),
      );
    });
  });
}
