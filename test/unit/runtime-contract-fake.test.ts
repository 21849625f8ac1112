/** The Runtime contract (test/contract/runtime-contract.ts) over the in-memory fake runtime. */
import { runtimeContract } from '../contract/runtime-contract.ts';
import { createFakeImages } from '../helpers/fake-images.ts';
import { createFakeRuntime } from '../helpers/fake-runtime/index.ts';

runtimeContract('fake', async () => {
  const runtime = createFakeRuntime({ images: createFakeImages() });
  return { runtime, image: 'debian', close: () => runtime.shutdown({ killSandboxes: true }) };
});
