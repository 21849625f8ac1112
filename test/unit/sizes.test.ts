/** domain/sizes.ts: the one size parser and byte formatter every surface uses. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ForkboxError } from '../../src/domain/errors.ts';
import { formatBytes, parseSize } from '../../src/domain/sizes.ts';

const MiB = 1024 * 1024;

describe('sizes', () => {
  it('reads a bare number as MiB unless told its unit', () => {
    assert.equal(parseSize('256'), 256 * MiB);
    assert.equal(parseSize('4096', 1), 4096);
    assert.equal(parseSize('2G', 1), 2 * 1024 ** 3, 'a suffix wins over the bare unit');
    assert.throws(
      () => parseSize('lots', 1),
      (e: unknown) => e instanceof ForkboxError && e.code === 'invalid_argument',
    );
  });

  it('formats bytes readably', () => {
    assert.equal(formatBytes(512), '512 B');
    assert.equal(formatBytes(1536 * MiB), '1.5 GiB');
    assert.equal(formatBytes(2048), '2 KiB');
    assert.equal(formatBytes(12.34 * 1024 * MiB), '12.3 GiB');
    assert.equal(formatBytes(-2 * MiB), '-2 MiB');
  });
});
