/**
 * Client sessions in the engine (service/sessions.ts), on Node's mock timers: a session's sandboxes
 * outlive its last detach by the grace its client asked for, a re-attach within it keeps them, and an
 * explicit end (`graceMs: 0`) removes them at once.
 */
import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import type { SandboxRecord } from '../../src/domain/types.ts';
import type { Store } from '../../src/service/ports.ts';
import { createSessions } from '../../src/service/sessions.ts';

function harness() {
  const killed: string[] = [];
  const recs = [
    { id: 'sb-1', session: 's1' },
    { id: 'sb-2', session: 's2' },
  ] as SandboxRecord[];
  const store = {
    listSandboxes: (f: { session?: string }) =>
      recs.filter((r) => r.session === f.session && !killed.includes(r.id)),
  } as unknown as Store;
  const sessions = createSessions({
    store,
    log: { warn: () => undefined },
    kill: async (rec) => killed.push(rec.id),
    graceMs: 2000,
  });
  return { sessions, killed };
}

describe('client sessions: grace', () => {
  it('keeps the sandboxes for the grace the client asked for, and a re-attach keeps them', () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const { sessions, killed } = harness();
      const detach = sessions.attach('s1', { graceMs: 600_000 });
      detach();
      mock.timers.tick(599_000);
      assert.deepEqual(killed, [], 'still within the grace');
      const again = sessions.attach('s1');
      mock.timers.tick(10 * 600_000);
      assert.deepEqual(killed, [], 're-attached: kept');
      again();
      mock.timers.tick(600_000);
      assert.deepEqual(killed, ['sb-1'], 'the re-attached session kept its grace, then ended');
    } finally {
      mock.timers.reset();
    }
  });

  it('ends at once when the client ends the session, and uses the engine default otherwise', () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const { sessions, killed } = harness();
      sessions.attach('s1', { graceMs: 600_000 })({ graceMs: 0 });
      mock.timers.tick(0);
      assert.deepEqual(killed, ['sb-1']);
      sessions.attach('s2')();
      mock.timers.tick(1999);
      assert.deepEqual(killed, ['sb-1']);
      mock.timers.tick(1);
      assert.deepEqual(killed, ['sb-1', 'sb-2']);
    } finally {
      mock.timers.reset();
    }
  });
});
