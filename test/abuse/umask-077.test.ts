/**
 * Attack (a careless operator rather than a sandbox): start the daemon under `umask 077`, as a hardened
 * root shell or a service manager with `UMask=0077` does. Precedent: issue #11 item 11 — every directory
 * the daemon made came out 0700, the sandboxes' root (an unprivileged host uid) could not reach its inbox
 * or the agent code, the template's child died during set-up unnoticed and every create timed out after
 * 10 seconds.
 *
 * Contained when: a daemon under `umask 077` creates, runs, forks and kills sandboxes as under the usual
 * umask, and the directories sandboxes must reach carry the modes forkbox sets, not the umask's.
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type AbuseDaemon, startDaemon } from '../helpers/abuse.ts';
import { nativeUnavailable } from '../helpers/native.ts';

const why = nativeUnavailable();
const mode = (p: string) => (statSync(p).mode & 0o7777).toString(8);

describe('abuse: a daemon started under umask 077', () => {
  let d: AbuseDaemon;

  before(async () => {
    if (why) throw new Error(`this abuse test needs the native runtime: ${why}`);
    d = await startDaemon({ umask: '077' });
  });
  after(async () => {
    await d?.stop();
  });

  it('sets its own umask at start (the shell that started it had 077)', () => {
    const status = readFileSync(`/proc/${d.pid}/status`, 'utf8');
    assert.match(status, /^Umask:\s*0022$/m);
  });

  it('creates, runs, forks and kills sandboxes', async () => {
    const sb = await d.api.createSandbox({});
    assert.equal((await d.api.exec(sb.id, { argv: ['echo', 'hi'] })).stdout, 'hi\n');
    await d.api.runCode(sb.id, { code: 'x = 41' });
    const f = await d.api.forkSandbox(sb.id, { n: 1 });
    const childId = f.children[0]?.sandbox?.id;
    assert.ok(f.children[0]?.ok && childId, JSON.stringify(f));
    assert.equal((await d.api.runCode(childId, { code: 'print(x + 1)' })).stdout, '42\n');
    // The state dir and templates/ are walked through by templates' runc; the rest is closed to others.
    for (const dir of ['', 'templates'])
      assert.equal(mode(join(d.stateDir, dir)), '711', `${dir || 'the state dir'} has mode 0711`);
    for (const dir of ['inbox', 'agent', 'sandboxes', 'layers'])
      assert.equal(mode(join(d.stateDir, dir)), '700', `${dir} has mode 0700`);
    await d.api.killSandbox(sb.id);
    assert.equal((await d.api.getSandbox(childId)).state, 'running');
  });
});
