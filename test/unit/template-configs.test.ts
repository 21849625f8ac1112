/** Named template configs: validation, the SQLite round trip, and define/list/resolve/delete rules. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { errors, ForkboxError } from '../../src/domain/errors.ts';
import type { ImageRecord, SandboxRecord } from '../../src/domain/types.ts';
import {
  checkPrewarm,
  checkTemplateName,
  createTemplateConfigs,
  MAX_PREWARM_MODULES,
  TEMPLATE_LABEL,
} from '../../src/service/sandboxes/template-configs.ts';
import { openSqliteStore, type SqliteStore } from '../../src/storage/sqlite/index.ts';
import { sandboxRecord } from '../helpers/sandbox-record.ts';

const code = (c: string) => (e: unknown) => e instanceof ForkboxError && e.code === c;

describe('template config validation', () => {
  test('accepts dotted identifiers, de-duplicates and keeps the order', () => {
    assert.deepEqual(checkPrewarm(['json', 'email.mime.text', '_x1', 'json']), [
      'json',
      'email.mime.text',
      '_x1',
    ]);
    assert.deepEqual(checkPrewarm(undefined), []);
  });

  test('refuses what is not a module name (commas, paths, code, empty parts)', () => {
    for (const bad of ['', 'a,b', 'os; import x', '../x', 'a..b', '.a', 'a.', '1abc', 'a b', 'é']) {
      assert.throws(() => checkPrewarm([bad]), code('invalid_argument'), bad);
    }
    assert.throws(() => checkPrewarm([42 as unknown as string]), code('invalid_argument'));
    assert.throws(() => checkPrewarm(['x'.repeat(201)]), code('invalid_argument'));
  });

  test(`at most ${MAX_PREWARM_MODULES} modules`, () => {
    const many = Array.from({ length: MAX_PREWARM_MODULES }, (_, i) => `m${i}`);
    assert.equal(checkPrewarm(many).length, MAX_PREWARM_MODULES);
    assert.throws(() => checkPrewarm([...many, 'one_more']), /at most 64/);
  });

  test('template names follow the sandbox name rules', () => {
    assert.equal(checkTemplateName('py-data_1.0'), 'py-data_1.0');
    for (const bad of ['', '-x', 'a/b', 'x'.repeat(64), 'a b'])
      assert.throws(() => checkTemplateName(bad), code('invalid_argument'), bad);
  });
});

describe('template configs over the SQLite store', () => {
  let dir: string;
  let store: SqliteStore;
  let t = 1000;
  const images = new Map<string, ImageRecord>(
    ['debian', 'alpine'].map((name) => [
      name,
      {
        name,
        id: `id-${name}`,
        layers: [],
        createdAt: 0,
        sizeBytes: 0,
        source: 'test',
        env: {},
        python: '/usr/bin/python3',
      },
    ]),
  );
  const catalog = {
    require(name: string): ImageRecord {
      const i = images.get(name);
      if (!i) throw errors.imageNotFound(name);
      return i;
    },
  };
  const host = { tenant: 'default', hostTenant: 'default' };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'forkbox-tplcfg-'));
    store = openSqliteStore({ path: join(dir, 'forkbox.db') });
  });
  after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const configs = () =>
    createTemplateConfigs({ store, images: catalog, defaultImage: 'debian', now: () => t });

  test('store round trip: put, get, upsert keeps createdAt, list by name, delete', () => {
    store.putTemplateConfig({ name: 'b', image: 'debian', prewarm: ['json'], createdAt: 5, updatedAt: 5 });
    store.putTemplateConfig({ name: 'a', image: 'alpine', prewarm: [], createdAt: 6, updatedAt: 6 });
    store.putTemplateConfig({
      name: 'b',
      image: 'alpine',
      prewarm: ['x.y'],
      pool: 3,
      createdAt: 9,
      updatedAt: 9,
    });
    assert.equal(store.getTemplateConfig('a')?.pool, null, "no pool of its own: the daemon's default");
    assert.deepEqual(store.getTemplateConfig('b'), {
      name: 'b',
      image: 'alpine',
      prewarm: ['x.y'],
      pool: 3,
      createdAt: 5,
      updatedAt: 9,
    });
    assert.deepEqual(
      store.listTemplateConfigs().map((c) => c.name),
      ['a', 'b'],
    );
    assert.equal(store.deleteTemplateConfig('a'), true);
    assert.equal(store.deleteTemplateConfig('a'), false);
    assert.equal(store.getTemplateConfig('a'), undefined);
    store.deleteTemplateConfig('b');
  });

  test('the built-in default always exists and cannot be redefined or deleted', async () => {
    const c = configs();
    const [first] = c.list();
    assert.deepEqual(first, {
      name: 'default',
      image: 'debian',
      prewarm: [],
      pool: null,
      builtin: true,
      createdAt: null,
      updatedAt: null,
    });
    assert.throws(() => c.define({ name: 'default', prewarm: ['json'] }, host), /built-in/);
    await assert.rejects(c.remove('default', host), /built-in/);
    assert.equal(c.list().length, 1);
  });

  test('define validates the image and modules; resolve picks image, prewarm and the label', () => {
    const c = configs();
    assert.throws(() => c.define({ name: 'x', image: 'nope' }, host), code('not_found'));
    assert.throws(() => c.define({ name: 'x', prewarm: ['a,b'] }, host), code('invalid_argument'));
    assert.throws(() => c.define({ name: 'x', pool: 65 }, host), code('invalid_argument'));
    const info = c.define({ name: 'warm', prewarm: ['json', 'sqlite3', 'json'] }, host);
    assert.deepEqual(info.prewarm, ['json', 'sqlite3']);
    assert.equal(info.image, 'debian');
    assert.deepEqual(
      c.list().map((i) => i.name),
      ['default', 'warm'],
    );

    const r = c.resolve({ template: 'warm', labels: { team: 'a' } });
    assert.equal(r.image.name, 'debian');
    assert.deepEqual(r.prewarm, ['json', 'sqlite3']);
    assert.deepEqual(r.labels, { team: 'a', [TEMPLATE_LABEL]: 'warm' });
    assert.equal(c.resolve({ template: 'warm', image: 'debian' }).image.name, 'debian');
    assert.throws(() => c.resolve({ template: 'warm', image: 'alpine' }), /uses image 'debian'/);
    assert.throws(() => c.resolve({ template: 'cold' }), code('not_found'));

    // No template: the image asked for, nothing pre-imported, and no claimed template label.
    const plain = c.resolve({ image: 'alpine', labels: { [TEMPLATE_LABEL]: 'warm' } });
    assert.equal(plain.image.name, 'alpine');
    assert.deepEqual(plain.prewarm, []);
    assert.deepEqual(plain.labels, {});
  });

  test('only the host tenant defines or deletes', async () => {
    const c = configs();
    const other = { tenant: 'alice', hostTenant: 'default' };
    assert.throws(() => c.define({ name: 'mine' }, other), code('permission_denied'));
    await assert.rejects(c.remove('warm', other), code('permission_denied'));
    assert.ok(
      c.list().some((i) => i.name === 'warm'),
      'listing is open to every tenant',
    );
  });

  test('delete is refused while live sandboxes use the template, naming them', async () => {
    const released: string[] = [];
    const c = createTemplateConfigs({
      store,
      images: catalog,
      defaultImage: 'debian',
      now: () => t,
      release: async (image, prewarm) => {
        released.push(`${image}:${prewarm.join(',')}`);
        return true;
      },
    });
    const rec = (id: string, state: SandboxRecord['state'], tenant = 'default'): SandboxRecord =>
      sandboxRecord(id, { tenant, state, labels: { [TEMPLATE_LABEL]: 'warm' }, createdAt: 1, updatedAt: 1 });
    store.insertSandbox(rec('sb-live', 'creating', 'bob'));
    store.transitionSandbox('sb-live', 'running');
    store.insertSandbox(rec('sb-dead', 'creating'));
    store.transitionSandbox('sb-dead', 'failed');
    await assert.rejects(
      c.remove('warm', host),
      (e: unknown) =>
        e instanceof ForkboxError &&
        e.code === 'conflict' &&
        /used by 1 live sandbox\(es\) \(sb-live\)/.test(e.message),
    );
    store.transitionSandbox('sb-live', 'killing');
    store.transitionSandbox('sb-live', 'killed');
    t = 2000;
    assert.deepEqual(released, [], 'nothing released while in use');
    // Another config with the same image and modules keeps the template container.
    c.define({ name: 'twin', prewarm: ['json', 'sqlite3'] }, host);
    c.define({ name: 'empty' }, host);
    assert.deepEqual(await c.remove('warm', host), { deleted: 'warm' });
    assert.deepEqual(released, [], 'twin still uses the same template');
    await c.remove('empty', host);
    assert.deepEqual(released, [], "no modules: that is the image's default template");
    await c.remove('twin', host);
    assert.deepEqual(released, ['debian:json,sqlite3']);
    await assert.rejects(c.remove('warm', host), code('not_found'));
  });
});
