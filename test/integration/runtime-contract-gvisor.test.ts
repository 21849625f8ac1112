/**
 * The Runtime contract (test/contract/runtime-contract.ts) over the gvisor runtime: each sandbox its own
 * runsc sandbox, driven through the port directly. What the runtime does not support is in its
 * capabilities' `unsupported`, and the contract holds it to failing clearly there.
 */
import assert from 'node:assert/strict';
import { runtimeContract } from '../contract/runtime-contract.ts';
import { gvisorUnavailable, openNative } from '../helpers/native.ts';

runtimeContract('gvisor', async () => {
  const why = gvisorUnavailable();
  assert.equal(why, null, `the gvisor runtime cannot run here: ${why}`);
  const fx = await openNative();
  assert.ok(fx.opened.gvisor, 'the daemon found no runsc');
  return { runtime: fx.opened.gvisor, image: 'debian', close: () => fx.close() };
});
