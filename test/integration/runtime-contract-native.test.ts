/**
 * The Runtime contract (test/contract/runtime-contract.ts) over the native runtime: real templates,
 * forked sandboxes, overlay roots and cgroups, driven through the port directly (no engine in between).
 */
import assert from 'node:assert/strict';
import { runtimeContract } from '../contract/runtime-contract.ts';
import { nativeUnavailable, openNative } from '../helpers/native.ts';

runtimeContract('native', async () => {
  const why = nativeUnavailable();
  assert.equal(why, null, `the native runtime cannot run here: ${why}`);
  const fx = await openNative();
  return { runtime: fx.opened.runtime, image: 'debian', close: () => fx.close() };
});
