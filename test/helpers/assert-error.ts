/** Assert that a promise rejects with a ForkboxError of `code` (and a message matching `re`). */
import assert from 'node:assert/strict';
import { type ForkboxError, isForkboxError } from '../../src/domain/errors.ts';

export async function rejectsWith(p: Promise<unknown>, code: string, re?: RegExp): Promise<ForkboxError> {
  try {
    await p;
  } catch (e) {
    assert.ok(isForkboxError(e), `expected a ForkboxError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (re) assert.match(e.message, re);
    return e;
  }
  assert.fail(`expected an error with code ${code}`);
}
