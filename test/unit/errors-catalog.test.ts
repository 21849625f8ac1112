/**
 * The error catalog's wrapping of anything thrown: a host condition reported through an errno (disk
 * full, a process limit, something still mounted, no permission) reaches the caller as its own code
 * with advice; only what no code covers is `internal`, worded as a forkbox bug.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { exitCodeFor } from '../../src/cli/output/output.ts';
import { ERROR_CODES, ForkboxError, toForkboxError } from '../../src/domain/errors.ts';
import { toHttpError } from '../../src/protocol/rest/errors.ts';

function errnoError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${message}`), { code });
}

describe('toForkboxError', () => {
  it('keeps a ForkboxError as it is', () => {
    const e = new ForkboxError('busy', 'x');
    assert.equal(toForkboxError(e), e);
  });

  it('maps host errnos to their codes, with advice and without the bug wording', () => {
    const cases: [string, string][] = [
      ['ENOSPC', 'resource_exhausted'],
      ['EDQUOT', 'resource_exhausted'],
      ['ENOMEM', 'resource_exhausted'],
      ['EAGAIN', 'resource_exhausted'],
      ['EMFILE', 'resource_exhausted'],
      ['ENFILE', 'resource_exhausted'],
      ['EBUSY', 'busy'],
      ['EACCES', 'permission_denied'],
      ['EPERM', 'permission_denied'],
    ];
    for (const [errno, code] of cases) {
      const cause = errnoError(errno, "something failed, write '/var/lib/forkbox/x'");
      const e = toForkboxError(cause);
      assert.equal(e.code, code, errno);
      assert.doesNotMatch(e.message, /forkbox bug/, errno);
      assert.match(e.message, /\/var\/lib\/forkbox\/x.*: \S.*\.$/, `${errno}: the path, then advice`);
      assert.deepEqual(e.details, { errno });
      assert.equal(e.cause, cause);
    }
  });

  it('a real errno from the host: removing a non-empty directory with rmdir is not a bug', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fbx-errors-'));
    try {
      mkdirSync(join(dir, 'd'));
      writeFileSync(join(dir, 'd', 'f'), 'x');
      const { rmdir } = await import('node:fs/promises');
      const thrown = await rmdir(join(dir, 'd')).then(
        () => assert.fail('rmdir of a non-empty directory succeeded'),
        (e: unknown) => e,
      );
      // ENOTEMPTY is not a host condition in the table: it stays internal, the bug wording kept.
      assert.equal(toForkboxError(thrown).code, 'internal');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('anything else is internal and says it is a forkbox bug', () => {
    for (const thrown of [new TypeError('x is undefined'), 'a string', errnoError('ENOTEMPTY', 'rmdir')]) {
      const e = toForkboxError(thrown);
      assert.equal(e.code, 'internal');
      assert.match(e.message, /This is a forkbox bug; please report it\.$/);
    }
  });

  it('each surface maps the wrapped code: REST status and CLI exit code', () => {
    const e = errnoError('ENOSPC', 'no space left on device');
    assert.equal(toHttpError(e).status, ERROR_CODES.resource_exhausted.http);
    assert.equal(exitCodeFor(e), ERROR_CODES.resource_exhausted.exit);
    assert.equal(exitCodeFor(new Error('boom')), ERROR_CODES.internal.exit);
  });
});
