/**
 * The daemon and the CLI for real: the CLI starts the daemon, the daemon is SIGKILLed with sandboxes
 * running, the next CLI call starts it again and every sandbox comes back with its files and REPL
 * variables; nothing is left frozen or half-mounted. Client sessions end with their clients.
 */
import assert from 'node:assert/strict';
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openEngine } from '../../src/composition.ts';
import { mountsUnder } from '../../src/runtimes/native/host/mounts.ts';
import { createDaemonClient } from '../../src/transports/daemon-client.ts';
import { isFrozen, sandboxCgroupRel } from '../helpers/cgroup-files.ts';
import { makeStateDir, nativeUnavailable, quietLog, storageMounts } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

const skip = nativeUnavailable();
const BIN = join(import.meta.dirname, '../../bin/forkbox.js');

describe('daemon recovery through the CLI', { skip: skip ?? false }, () => {
  let stateDir: string;

  function cli(...args: string[]): SpawnSyncReturns<string> {
    return spawnSync(process.execPath, [BIN, '--state-dir', stateDir, ...args], {
      encoding: 'utf8',
      timeout: 60_000,
    });
  }
  function ok(...args: string[]): string {
    const r = cli(...args);
    assert.equal(r.status, 0, `forkbox ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
    return r.stdout;
  }
  function daemonPid(): number {
    return Number(readFileSync(join(stateDir, 'lock.pid'), 'utf8').trim());
  }
  async function waitGone(pid: number): Promise<void> {
    await waitFor(
      () => {
        try {
          process.kill(pid, 0);
          return false;
        } catch {
          return true;
        }
      },
      { what: `process ${pid} exits`, intervalMs: 50 },
    );
  }

  before(() => {
    stateDir = makeStateDir();
  });

  after(async () => {
    if (!stateDir) return;
    try {
      const pid = daemonPid();
      process.kill(pid, 'SIGTERM');
      await waitGone(pid);
    } catch {
      // no daemon
    }
    // Templates outlive the daemon by design: remove them (and anything left) in-process.
    const opened = await openEngine({ stateDir, log: quietLog(), reapIntervalMs: 0 });
    await opened.close({ killSandboxes: true });
    assert.deepEqual(mountsUnder(stateDir), [], 'nothing left mounted');
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('survives SIGKILL of the daemon with sandboxes, files and REPL state intact', async () => {
    const a = JSON.parse(ok('--json', 'create', '--name', 'keep-a')) as { id: string };
    const b = JSON.parse(ok('--json', 'create', '--name', 'keep-b', '--memory', '256m')) as { id: string };
    ok('exec', a.id, '--', 'sh', '-c', 'echo precious > /root/data.txt');
    ok('eval', b.id, 'answer = 6 * 7');
    const first = daemonPid();

    process.kill(first, 'SIGKILL');
    await waitGone(first);

    // The next CLI call starts a new daemon, which re-adopts both sandboxes.
    assert.equal(ok('exec', a.id, '--', 'cat', '/root/data.txt'), 'precious\n');
    assert.notEqual(daemonPid(), first);
    assert.match(ok('eval', b.id, 'answer'), /42/);
    const ls = JSON.parse(ok('--json', 'ls')) as { id: string; state: string }[];
    assert.deepEqual(
      ls.map((s) => [s.id, s.state]).sort(),
      [
        [a.id, 'running'],
        [b.id, 'running'],
      ].sort(),
    );
    // Nothing frozen, nothing half-mounted: every forkbox cgroup is thawed, and the only mounts under
    // the state dir are the template's root and inbox.
    for (const id of [a.id, b.id]) {
      assert.equal(isFrozen(sandboxCgroupRel(stateDir, id)), false, `${id}'s cgroup is thawed`);
    }
    const templates = readdirSync(join(stateDir, 'templates'));
    assert.equal(templates.length, 1);
    const expected = [
      join(stateDir, 'templates', templates[0] ?? '', 'bundle', 'rootfs'),
      join(stateDir, 'inbox', templates[0] ?? ''),
    ];
    expected.push(...storageMounts(stateDir));
    for (const m of mountsUnder(stateDir)) {
      assert.ok(
        expected.includes(m) || [a.id, b.id].some((id) => m === join(stateDir, 'inbox', id)),
        `unexpected mount ${m}`,
      );
    }
    ok('kill', a.id, b.id);
  });

  it('removes a session’s sandboxes when its client goes away, but keeps persistent ones', async () => {
    ok('ls'); // make sure a daemon runs
    const client = createDaemonClient({ socketPath: join(stateDir, 'forkbox.sock') });
    const session = await client.openSession();
    const inSession = client.withSession(session.id);
    const temp = await inSession.createSandbox({});
    const kept = await inSession.createSandbox({ persistent: true });
    assert.equal(temp.persistent, false);
    assert.equal(kept.persistent, true);
    session.close();
    const ended = await waitFor(
      async () => {
        const cur = await client.getSandbox(temp.id);
        return cur.state === 'killed' ? cur : null;
      },
      { what: `the session's sandbox ${temp.id} is killed once its client went away`, timeoutMs: 30_000 },
    );
    assert.match(ended.endReason ?? '', /session ended/);
    assert.equal((await client.getSandbox(kept.id)).state, 'running');
    await client.killSandbox(kept.id);
    client.close();
    inSession.close();
  });
});
