/**
 * Attack: exhaust the host filesystem's inodes (or its metadata space) from a sandbox with empty files
 * (issue #11 item 6: 1,000,000 files written in a sandbox landed on the host). Precedent: inode
 * exhaustion of shared container hosts (a node's `/var/lib/docker` running out of inodes with space
 * left; Kubernetes' `nodefs.inodesFree` eviction signal exists for it).
 *
 * Contained when a million empty files are refused with ENOSPC/EDQUOT long before a million, the host
 * stores no more than the sandbox's disk limit for them, and the sandbox works again after deleting.
 * Copy driver: the inode limit is exact (its own ext4 has that many inodes). btrfs: no fixed inode table;
 * each inode's metadata is charged to the sandbox's quota, so the byte limit bounds the count (~90,000
 * empty files per 32 MiB here).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { allocatedBytes, floodProgram, hostFileOf, MiB, parseOutcome } from '../helpers/disk.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const LIMIT_MB = 32;
const INODES = 5000;
const SLACK = 16 * MiB;

for (const storage of ['btrfs', 'copy'] as const) {
  describe(`inode flood (${storage} driver)`, () => {
    let fx: NativeFixture;
    let api: ForkboxApi;

    before(async () => {
      const why = nativeUnavailable();
      if (why) throw new Error(`this test needs the native runtime: ${why}`);
      fx = await openNative({ storage });
      api = fx.opened.api;
    });
    after(async () => {
      await fx?.close();
    });

    it('refuses a million empty files before they cost the host more than the limit', async () => {
      const sb = await api.createSandbox({ diskMb: LIMIT_MB, diskInodes: INODES });
      assert.equal(sb.limits.diskInodes, INODES);
      const hostFile = hostFileOf(fx.stateDir, storage, sb.id);
      const before = allocatedBytes(hostFile);
      const r = await api.exec(sb.id, { argv: floodProgram('/flood', 1_000_000), timeoutSeconds: 900 });
      const out = parseOutcome(r.stdout);
      assert.match(out.err, /^(ENOSPC|EDQUOT)$/, `${r.stdout}${r.stderr}`);
      if (storage === 'copy') {
        // ext4 rounds the inode count up to whole inode-table blocks.
        assert.ok(out.n <= INODES * 1.1, `made ${out.n} files under a ${INODES}-inode limit`);
      } else {
        // Inodes cost metadata bytes charged to the quota: 32 MiB holds on the order of 10^5, not 10^6.
        assert.ok(out.n < 250_000, `made ${out.n} files under a ${LIMIT_MB} MiB limit`);
      }
      await api.exec(sb.id, { argv: ['sync'] });
      const grew = allocatedBytes(hostFile) - before;
      assert.ok(grew <= LIMIT_MB * MiB + SLACK, `the host stored ${grew} bytes for a ${LIMIT_MB} MiB limit`);
      if (storage === 'copy') {
        const usage = (await api.getSandbox(sb.id, { usage: true })).usage;
        assert.ok((usage?.diskInodes ?? 0) >= out.n, `inodes used ${usage?.diskInodes} after ${out.n} files`);
      }

      const rm = await api.exec(sb.id, { argv: ['rm', '-rf', '/flood'], timeoutSeconds: 900 });
      assert.equal(rm.exitCode, 0, rm.stderr);
      const again = parseOutcome((await api.exec(sb.id, { argv: floodProgram('/again', 1000) })).stdout);
      assert.deepEqual(again, { n: 1000, err: 'none' });
    });
  });
}
