/**
 * Attack: read /proc/keys from inside a sandbox to learn about other sandboxes and templates. Precedent:
 * issue #11 item 16 — runc gave every container a session keyring named after it (`_ses.<container id>`),
 * all templates run as the same host uid, so every sandbox listed every template's name (and so which
 * images and limits other tenants use).
 *
 * Contained when: /proc/keys in a sandbox names no template, no sandbox and no runc container, with two
 * templates (two memory limits) and two sandboxes running.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { abuseDaemon } from '../helpers/abuse.ts';

describe('abuse: /proc/keys', () => {
  const d = abuseDaemon();

  it('names no other sandbox, template or container', async () => {
    const a = await d.api.createSandbox({});
    const b = await d.api.createSandbox({ memoryMb: 256 });
    const templates = readdirSync(join(d.stateDir, 'templates'));
    assert.ok(templates.length >= 1, 'a template is running');
    for (const sb of [a, b]) {
      const r = await d.api.exec(sb.id, { argv: ['cat', '/proc/keys'] });
      assert.equal(r.exitCode, 0, JSON.stringify(r));
      process.stderr.write(`# /proc/keys in ${sb.id}:\n${r.stdout.replace(/^/gm, '#   ')}\n`);
      // Only this daemon's names: a daemon of an older forkbox on the same host (same sandbox uid) still
      // names its own templates here, which only its upgrade fixes.
      for (const name of [...templates, a.id, b.id])
        assert.equal(r.stdout.includes(name), false, `/proc/keys shows '${name}':\n${r.stdout}`);
    }
  });
});
