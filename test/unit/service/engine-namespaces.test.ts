/**
 * Namespaces within a tenant: names are unique per namespace, `ns/name` reaches another namespace,
 * lists and kills filter by namespace (`*` = all), forks stay in their source's namespace, and a caller
 * limited to some namespaces (a token's) neither sees nor creates outside them.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { rejectsWith } from '../../helpers/assert-error.ts';
import { createTestEngine, type TestEngine } from '../../helpers/test-engine.ts';

describe('engine: namespaces', () => {
  let t: TestEngine;
  beforeEach(() => {
    t = createTestEngine();
  });
  afterEach(() => t.close());

  it('one name in two namespaces; lists by namespace; kill by name within one', async () => {
    const d = await t.api.createSandbox({ name: 'web' });
    const p = await t.api.createSandbox({ name: 'web', namespace: 'prod' });
    assert.equal(d.namespace, 'default');
    assert.equal(p.namespace, 'prod');
    await rejectsWith(t.api.createSandbox({ name: 'web', namespace: 'prod' }), 'already_exists');
    assert.equal((await t.api.getSandbox('web')).id, d.id, "a bare name is in 'default'");
    assert.equal((await t.api.getSandbox('prod/web')).id, p.id);
    assert.equal((await t.api.getSandbox(`prod/${p.id}`)).id, p.id);
    await rejectsWith(t.api.getSandbox(`prod/${d.id}`), 'not_found');
    const ids = async (namespace?: string) =>
      (await t.api.listSandboxes(namespace === undefined ? {} : { namespace })).map((s) => s.id);
    assert.deepEqual(await ids(), [d.id]);
    assert.deepEqual(await ids('prod'), [p.id]);
    assert.deepEqual(await ids('*'), [d.id, p.id]);
    assert.deepEqual(await ids('nowhere'), []);
    await rejectsWith(t.api.listSandboxes({ namespace: 'bad/ns' }), 'invalid_argument');
    const killed = await t.api.killSandbox('web', { namespace: 'prod' });
    assert.equal(killed.id, p.id);
    assert.equal((await t.api.getSandbox('web')).state, 'running', "'default' untouched");
  });

  it("forks inherit their source's namespace", async () => {
    await t.api.createSandbox({ name: 'src', namespace: 'team' });
    const out = await t.api.forkSandbox('team/src', { n: 1, names: ['kid'] });
    assert.equal(out.children[0]?.sandbox?.namespace, 'team');
    assert.equal((await t.api.getSandbox('team/kid')).namespace, 'team');
    await rejectsWith(t.api.getSandbox('kid'), 'not_found');
  });

  it('a caller limited to namespaces neither sees nor creates outside them', async () => {
    const other = await t.api.createSandbox({ name: 'x', namespace: 'other' });
    const limited = t.scoped({ tenant: 'default', namespaces: ['team', 'lab'] });
    const mine = await limited.createSandbox({ name: 'x' });
    assert.equal(mine.namespace, 'team', 'its first namespace is its default');
    await rejectsWith(limited.createSandbox({ namespace: 'other' }), 'permission_denied');
    await rejectsWith(limited.getSandbox(other.id), 'not_found');
    await rejectsWith(limited.getSandbox('other/x'), 'not_found');
    await rejectsWith(limited.killSandbox(other.id), 'not_found');
    await rejectsWith(limited.killSandbox('x', { namespace: 'other' }), 'permission_denied');
    assert.deepEqual(
      (await limited.listSandboxes({ namespace: '*' })).map((s) => s.id),
      [mine.id],
    );
    assert.deepEqual(await limited.listSandboxes({ namespace: 'other' }), []);
    assert.equal((await t.api.getSandbox('other/x')).state, 'running');
  });
});
