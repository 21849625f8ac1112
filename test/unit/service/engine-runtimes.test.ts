/**
 * Creates that name a runtime (CreateSandboxRequest.runtime) through the real engine over the fake
 * runtime: the default is native, the name reaches CreateSandboxSpec, an unknown name is invalid, one the
 * daemon lacks is unavailable and says how to install it, the chosen runtime's capabilities decide what a
 * create may ask for, the warm pool serves only the default runtime, and sandbox info and status report
 * the runtimes.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { RuntimeName } from '../../../src/domain/runtime-id.ts';
import type { CreateSandboxRequest } from '../../../src/service/api.ts';
import type { RuntimeChoice } from '../../../src/service/sandboxes/runtime-choice.ts';
import {
  capabilitiesOf,
  defaultRuntime,
  offeredRuntimes,
  runtimeOfSandbox,
} from '../../../src/service/sandboxes/runtime-choice.ts';
import { rejectsWith } from '../../helpers/assert-error.ts';
import { sandboxRecord } from '../../helpers/sandbox-record.ts';
import { createTestEngine, type TestEngine } from '../../helpers/test-engine.ts';
import { waitFor } from '../../helpers/wait-for.ts';

/** Both runtimes; gvisor's forks carry every process and it has network egress (the fake's native has none). */
const BOTH = { native: {}, gvisor: { forkProcesses: true, network: true, unsupported: ['project'] } };

/** The runtime each runtime create of a sandbox id was asked for. */
function asked(t: TestEngine, id: string): RuntimeName | undefined {
  return t.runtime.calls.find((c) => c.op === 'createSandbox' && c.rid === id)?.runtime;
}

describe('engine: the runtime a create names', () => {
  let t: TestEngine;
  afterEach(() => t.close());

  it('a create that names none is native, and says so', async () => {
    t = createTestEngine({ runtimes: BOTH });
    const sb = await t.api.createSandbox({});
    assert.equal(sb.runtime, 'native');
    assert.equal(asked(t, sb.id), 'native', 'the spec names the runtime whose capabilities were checked');
    assert.equal(sb.capabilities?.network, false);
    assert.equal(sb.capabilities?.forkProcesses, undefined);
    assert.equal((await t.api.getSandbox(sb.id)).runtime, 'native');
  });

  it("runtime 'gvisor' reaches CreateSandboxSpec; info, list and forks report it with its capabilities", async () => {
    t = createTestEngine({ runtimes: BOTH });
    const sb = await t.api.createSandbox({ name: 'g', runtime: 'gvisor' });
    assert.equal(asked(t, sb.id), 'gvisor');
    assert.equal(sb.runtime, 'gvisor');
    assert.equal(sb.capabilities?.forkProcesses, true);
    assert.deepEqual(sb.capabilities?.unsupported, ['project']);
    const got = await t.api.getSandbox('g');
    assert.equal(got.runtime, 'gvisor');
    assert.equal(got.capabilities?.network, true);
    const listed = (await t.api.listSandboxes()).find((s) => s.id === sb.id);
    assert.equal(listed?.runtime, 'gvisor');
    assert.equal(listed?.capabilities?.forkProcesses, true);
    const fork = await t.api.forkSandbox('g', { n: 1 });
    assert.equal(fork.children[0]?.sandbox?.runtime, 'gvisor', "a fork is its source's runtime's");
    // Paths that answer with the record (lifecycle calls) say it too.
    assert.equal((await t.api.pauseSandbox('g')).runtime, 'gvisor');
    assert.equal((await t.api.killSandbox('g', { cascade: true })).capabilities?.forkProcesses, true);
  });

  it('an unknown runtime name is invalid_argument; nothing is recorded', async () => {
    t = createTestEngine({ runtimes: BOTH });
    const req = { runtime: 'kata' } as unknown as CreateSandboxRequest;
    await rejectsWith(
      t.api.createSandbox(req),
      'invalid_argument',
      /runtime 'kata' is not one of native, gvisor/,
    );
    assert.equal(t.store.listSandboxes().length, 0);
  });

  it('a runtime the daemon lacks is unavailable, saying how to install it', async () => {
    t = createTestEngine();
    const err = await rejectsWith(
      t.api.createSandbox({ runtime: 'gvisor' }),
      'unavailable',
      /the gvisor runtime needs runsc: run `npm run setup` as root \(it installs runsc from Debian's backports\), then restart the daemon/,
    );
    assert.match(err.message, /\(it has: native\)/);
    assert.equal(t.store.listSandboxes().length, 0);
    assert.equal((await t.api.createSandbox({ runtime: 'native' })).runtime, 'native');
  });

  it("the chosen runtime's capabilities decide what a create may ask for (network)", async () => {
    t = createTestEngine({ runtimes: BOTH });
    const network = 'allow:files.example.org';
    await rejectsWith(
      t.api.createSandbox({ network }),
      'requirement_missing',
      /the native runtime has no network/,
    );
    const g = await t.api.createSandbox({ network, runtime: 'gvisor' });
    assert.equal(g.network, network);
  });

  it('status lists the runtimes a create may name, the default first', async () => {
    t = createTestEngine({ runtimes: { gvisor: {}, native: {} } });
    assert.deepEqual((await t.api.status()).runtimes, ['native', 'gvisor']);
    const one = createTestEngine();
    assert.deepEqual((await one.api.status()).runtimes, ['native']);
    await one.close();
  });
});

describe('engine: the warm pool and runtimes', () => {
  let t: TestEngine;
  afterEach(() => t.close());

  it("serves only creates of the default runtime: a gvisor create is made, the pool's sandbox kept", async () => {
    t = createTestEngine({ poolSize: 1, runtimes: BOTH });
    await t.engine.recover();
    const ready = () =>
      waitFor(() => (t.engine.poolStats()[0]?.size === 1 ? true : undefined), {
        what: 'a pooled sandbox',
        timeoutMs: 5000,
        intervalMs: 10,
      });
    await ready();
    const g = await t.api.createSandbox({ runtime: 'gvisor' });
    assert.equal(asked(t, g.id), 'gvisor', 'made for this create, by gvisor');
    assert.equal(g.runtime, 'gvisor');
    assert.equal(t.engine.poolStats()[0]?.hits, 0);
    assert.equal(t.engine.poolStats()[0]?.size, 1, 'the pooled sandbox is still there');
    // Naming the default is the same as naming none: served from the pool.
    const n = await t.api.createSandbox({ runtime: 'native' });
    assert.equal(t.engine.poolStats()[0]?.hits, 1);
    assert.equal(n.runtime, 'native');
  });
});

describe('runtime choice (service/sandboxes/runtime-choice.ts)', () => {
  const caps = {
    forkProcessState: true,
    pause: true,
    limits: { memory: true, pids: true, cpu: true, disk: true },
    network: true,
  };
  const rec = (kind?: string) => sandboxRecord('sb-1', { runtime: kind === undefined ? {} : { kind } });

  it('a runtime without `runtimes` offers its own name only', () => {
    const native: RuntimeChoice = { name: 'native', capabilities: caps };
    assert.deepEqual(offeredRuntimes(native), ['native']);
    assert.equal(defaultRuntime(native), 'native');
    assert.equal(capabilitiesOf(native, 'native'), caps);
    assert.equal(runtimeOfSandbox(native, rec()), 'native');
    // A runtime named otherwise (a test double) offers none by name; its sandboxes are their records' kind.
    const other: RuntimeChoice = { name: 'other', capabilities: caps };
    assert.deepEqual(offeredRuntimes(other), []);
    assert.equal(defaultRuntime(other), 'native');
    assert.equal(runtimeOfSandbox(other, rec('gvisor')), 'gvisor');
  });

  it('a router: the keys of `runtimes`, each with its capabilities; its name is the default', () => {
    const gv = { ...caps, forkProcesses: true };
    const router: RuntimeChoice = {
      name: 'gvisor',
      capabilities: gv,
      runtimes: { native: caps, gvisor: gv },
      runtimeOf: (r) => (r.runtime.kind === 'gvisor' ? 'gvisor' : 'native'),
    };
    assert.deepEqual(offeredRuntimes(router), ['native', 'gvisor']);
    assert.equal(defaultRuntime(router), 'gvisor');
    assert.equal(capabilitiesOf(router, 'native'), caps);
    assert.equal(capabilitiesOf(router, 'gvisor'), gv);
    assert.equal(runtimeOfSandbox(router, rec()), 'native');
    assert.equal(runtimeOfSandbox(router, rec('gvisor')), 'gvisor');
  });
});
