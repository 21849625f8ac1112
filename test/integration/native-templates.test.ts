/**
 * Named, prewarmed templates over the real engine: a sandbox created from a template whose worker
 * pre-imported modules has them in sys.modules before any user code runs; a default sandbox does not;
 * a module that cannot be imported is logged and skipped; delete is refused while a sandbox uses it.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { TEMPLATE_LABEL } from '../../src/service/sandboxes/template-configs.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();
const HEAVY = 'import asyncio, email.message, http.client';
const BOGUS = 'forkbox_no_such_module_xyz';

describe('prewarmed templates picked by name', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
  });
  after(async () => {
    await fx?.close();
  });

  async function firstEval(id: string, code: string) {
    const r = await api.runCode(id, { code });
    assert.equal(r.ok, true, `${code}: ${r.error?.message ?? ''} ${r.stderr}`);
    return r;
  }

  it('a template sandbox starts with its modules imported; a default one does not', async (t) => {
    const def = await api.defineTemplate({
      name: 'warm',
      prewarm: ['json', 'decimal', 'sqlite3', 'asyncio', 'email.message', 'http.client', BOGUS],
    });
    assert.equal(def.image, 'debian');
    assert.equal(def.builtin, false);
    const listed = await api.listTemplates();
    assert.deepEqual(
      listed.map((x) => x.name),
      ['default', 'warm'],
    );

    const t0 = performance.now();
    const warm = await api.createSandbox({ template: 'warm', memoryMb: 256 });
    const warmCreateMs = performance.now() - t0;
    assert.equal(warm.labels[TEMPLATE_LABEL], 'warm');
    assert.equal(warm.image, 'debian');
    const t1 = performance.now();
    const cold = await api.createSandbox({ memoryMb: 256 });
    const coldCreateMs = performance.now() - t1;
    assert.equal(cold.labels[TEMPLATE_LABEL], undefined);

    // The very first eval in each: nothing imported by the user yet.
    const probe = "import sys; ('sqlite3' in sys.modules, 'decimal' in sys.modules, 'json' in sys.modules)";
    assert.equal((await firstEval(warm.id, probe)).value, '(True, True, True)');
    const coldProbe = (await firstEval(cold.id, probe)).value;
    assert.match(coldProbe ?? '', /^\(False, False, (True|False)\)$/, `cold sandbox: ${coldProbe}`);

    // Informational: a heavier import, warm vs cold (no timed assertion: machines differ).
    const warmHeavy = await firstEval(warm.id, HEAVY);
    const coldHeavy = await firstEval(cold.id, HEAVY);
    t.diagnostic(
      `first '${HEAVY}': warm ${warmHeavy.durationMs.toFixed(1)} ms, cold ${coldHeavy.durationMs.toFixed(1)} ms; ` +
        `first create (each starting its template container): warm ${warmCreateMs.toFixed(0)} ms, cold ${coldCreateMs.toFixed(0)} ms`,
    );
    process.stderr.write(
      `[native-templates] first '${HEAVY}': warm ${warmHeavy.durationMs.toFixed(1)} ms vs cold ${coldHeavy.durationMs.toFixed(1)} ms\n`,
    );

    // A module that cannot be imported did not break the template: the agent logs it to the daemon's log
    // (a `log` frame; nothing in a sandbox writes to a host file).
    assert.ok(
      fx.log.lines.some(
        (l) => l.includes('sandbox agent log') && l.includes(`prewarm import of '${BOGUS}' failed`),
      ),
      `the failed prewarm import is logged (agent lines: ${fx.log.lines
        .filter((l) => l.includes('sandbox agent log'))
        .join(' | ')
        .slice(0, 500)})`,
    );

    // A second sandbox from the same template reuses its container and is warm too; forks inherit.
    const warm2 = await api.createSandbox({ template: 'warm', memoryMb: 128 });
    const t2 = performance.now();
    assert.equal((await firstEval(warm2.id, "import sys; 'sqlite3' in sys.modules")).value, 'True');
    t.diagnostic(`second warm sandbox's first eval took ${(performance.now() - t2).toFixed(1)} ms`);
    const fork = await api.forkSandbox(warm2.id, { n: 1 });
    const child = fork.children[0]?.sandbox;
    assert.ok(child, JSON.stringify(fork.children));
    assert.equal(child.labels[TEMPLATE_LABEL], 'warm', 'a fork is counted as a user of the template');
    assert.equal((await firstEval(child.id, "import sys; 'decimal' in sys.modules")).value, 'True');

    // The template's image only: another image with it is refused.
    await assert.rejects(
      api.createSandbox({ template: 'warm', image: 'other' }),
      /template 'warm' uses image 'debian'/,
    );
    await assert.rejects(api.createSandbox({ template: 'nope' }), /no template 'nope'/);

    // Delete is refused while sandboxes use it, naming them; allowed once they are gone.
    await assert.rejects(api.deleteTemplate('warm'), (e: Error) => {
      assert.match(e.message, /used by 3 live sandbox/);
      for (const id of [warm.id, warm2.id, child.id]) assert.ok(e.message.includes(id), id);
      return true;
    });
    await api.killSandbox(warm.id);
    await api.killSandbox(warm2.id, { cascade: true });
    const tplDirs = () => readdirSync(join(fx.stateDir, 'templates')).sort();
    const before = tplDirs();
    assert.equal(before.length, 2, 'one template container for default, one for warm');
    assert.deepEqual(await api.deleteTemplate('warm'), { deleted: 'warm' });
    // Its template container is stopped (nothing uses it); the default one, with `cold` on it, stays.
    const left = tplDirs();
    assert.equal(left.length, 1, `left: ${left.join(', ')}`);
    assert.equal((await firstEval(cold.id, '6*7')).value, '42');
    assert.deepEqual(
      (await api.listTemplates()).map((x) => x.name),
      ['default'],
    );
    await assert.rejects(api.deleteTemplate('default'), /built-in/);
    await api.killSandbox(cold.id);
  });
});
