/**
 * The host-wide registry of template uid ranges (runtimes/native/host/uid-ranges.ts), on a registry dir
 * of the test's own: two reservations never overlap, a released range is handed out again, an entry whose
 * holder process is gone is free, users' subordinate ranges are skipped, a full space says what to do, and
 * FORKBOX_UID_SPACE is checked.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { createSys } from '../../src/runtimes/native/host/sys.ts';
import {
  createUidRanges,
  DEFAULT_UID_SPACE,
  parseUidSpace,
  RANGE_SIZE,
  subordinateRanges,
} from '../../src/runtimes/native/host/uid-ranges.ts';
import { rejectsWith } from '../helpers/assert-error.ts';

const claim = (template: string) => ({ stateId: 's1', stateDir: '/tmp/x', template });

describe('host uid ranges', () => {
  let dir: string;
  let subuid: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'fbx-ranges-'));
    subuid = join(dir, 'subuid');
    writeFileSync(subuid, '');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const ranges = (space = { start: 2 ** 30, end: 2 ** 30 + 3 * RANGE_SIZE }) =>
    createUidRanges({ sys: createSys(), dir: join(dir, 'reg'), space, subidFiles: [subuid] });

  it('reserves disjoint ranges, gives a released one out again, and records who holds each', () => {
    const r = ranges();
    const a = r.reserve(claim('tpl-a'));
    const b = r.reserve(claim('tpl-b'));
    assert.equal(a.size, RANGE_SIZE);
    assert.notEqual(a.hostStart, b.hostStart);
    assert.ok(Math.abs(a.hostStart - b.hostStart) >= RANGE_SIZE);
    r.release(a.hostStart);
    assert.equal(r.reserve(claim('tpl-c')).hostStart, a.hostStart);
    const doc = JSON.parse(readFileSync(join(dir, 'reg', 'ranges.json'), 'utf8')) as {
      ranges: { template: string; pid: number }[];
    };
    assert.deepEqual(doc.ranges.map((e) => e.template).sort(), ['tpl-b', 'tpl-c']);
    assert.ok(
      doc.ranges.every((e) => e.pid === process.pid),
      'held by this process until a template runs',
    );
  });

  it('a range whose holder process is gone is free again (a crash, a reboot)', () => {
    const r = ranges();
    const a = r.reserve(claim('tpl-a'));
    const dead = spawnSync('true');
    assert.equal(dead.status, 0);
    r.hold(a.hostStart, { pid: dead.pid ?? 1, startTime: 1 });
    assert.equal(r.reserve(claim('tpl-b')).hostStart, a.hostStart, 'the dead holder’s range is reused');
  });

  it("skips users' subordinate ranges, and says what to do when the space is full", async () => {
    writeFileSync(subuid, `alice:${2 ** 30 + 10}:65536\n# a comment\nbogus line\n`);
    assert.deepEqual(subordinateRanges([subuid]), [{ start: 2 ** 30 + 10, end: 2 ** 30 + 10 + 65536 }]);
    const r = ranges();
    const first = r.reserve(claim('tpl-a'));
    assert.equal(first.hostStart, 2 ** 30 + RANGE_SIZE, 'the range holding alice’s ids is skipped');
    r.reserve(claim('tpl-b'));
    await rejectsWith(
      Promise.resolve().then(() => r.reserve(claim('tpl-c'))),
      'resource_exhausted',
      /every host uid range .* FORKBOX_UID_SPACE/,
    );
  });

  it('checks FORKBOX_UID_SPACE', () => {
    assert.deepEqual(parseUidSpace(undefined), DEFAULT_UID_SPACE);
    assert.deepEqual(parseUidSpace(`${2 * RANGE_SIZE}-${4 * RANGE_SIZE}`), {
      start: 2 * RANGE_SIZE,
      end: 4 * RANGE_SIZE,
    });
    for (const bad of [
      '1000-2000',
      'x-y',
      `${RANGE_SIZE + 1}-${4 * RANGE_SIZE}`,
      `${4 * RANGE_SIZE}-${4 * RANGE_SIZE}`,
    ])
      assert.throws(() => parseUidSpace(bad), /FORKBOX_UID_SPACE must be/, bad);
  });
});
