/**
 * Sandboxes started again on their files after a reboot (or a container restart, which does the same to
 * them): the daemon stops with its sandboxes running, every process of the state dir is killed and every
 * mount under it goes (test/helpers/reboot.ts); the next daemon starts each one again on its kept upper
 * dir — a plain sandbox with a disk limit (btrfs quota, or with FORKBOX_STORAGE=copy its own ext4 image,
 * remounted), a fork child (on its frozen layers), a paused one — labelled `forkbox.restarted`, with a
 * fresh REPL, its published port re-opened, forkable and killable with nothing left behind. A snapshot's
 * holder is not revived: the snapshot restores from its layers alone.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { type OpenedEngine, openEngine } from '../../src/composition.ts';
import { mountsUnder } from '../../src/util/mountinfo.ts';
import { makeStateDir, nativeUnavailable, quietLog } from '../helpers/native.ts';
import { simulateReboot } from '../helpers/reboot.ts';
import { waitFor } from '../helpers/wait-for.ts';

const skip = nativeUnavailable();

async function getWhenUp(url: string): Promise<string> {
  return waitFor(
    async () => {
      const r = await fetch(url, { signal: AbortSignal.timeout(5000) }).catch(() => null);
      return r?.status === 200 ? r.text() : undefined;
    },
    { timeoutMs: 20_000, what: `${url} answering 200` },
  );
}

describe('sandboxes after a reboot', { skip: skip ?? false }, () => {
  it('start again on their files: fresh processes and REPL, the same files, ports and lineage', async () => {
    const stateDir = makeStateDir();
    const open = () => openEngine({ stateDir, log: quietLog(), reapIntervalMs: 0 });
    let opened: OpenedEngine = await open();
    try {
      let api = opened.api;
      const a = await api.createSandbox({ name: 'rv-a', diskMb: 64, ports: [8000] });
      await api.writeFile(a.id, '/root/data.txt', Buffer.from('precious\n'));
      assert.equal((await api.runCode(a.id, { code: 'x = 42' })).ok, true);
      const fork = await api.forkSandbox(a.id, { n: 1 });
      const child = fork.children[0]?.sandbox?.id ?? '';
      assert.equal((await api.exec(child, { cmd: 'echo mine > /root/child.txt' })).exitCode, 0);
      const paused = await api.createSandbox({ name: 'rv-paused' });
      await api.writeFile(paused.id, '/tmp/p.txt', Buffer.from('p\n'));
      await api.pauseSandbox(paused.id);
      await api.createSnapshot(a.id, { name: 'rv-snap' });
      const port = a.ports?.[0];
      assert.ok(port);

      await opened.close({ killSandboxes: false });
      await simulateReboot(stateDir);
      opened = await open();
      api = opened.api;

      for (const id of [a.id, child, paused.id]) {
        const s = await api.getSandbox(id);
        assert.equal(s.state, 'running', `${id} runs again`);
        assert.match(s.labels['forkbox.restarted'] ?? '', /^\d{4}-/, `${id} says when it was restarted`);
      }
      const cat = (id: string, path: string) => api.exec(id, { argv: ['cat', path] });
      assert.equal((await cat(a.id, '/root/data.txt')).stdout, 'precious\n');
      assert.equal((await cat(child, '/root/data.txt')).stdout, 'precious\n', 'the child’s layers');
      assert.equal((await cat(child, '/root/child.txt')).stdout, 'mine\n', 'the child’s own upper');
      assert.equal((await cat(paused.id, '/tmp/p.txt')).stdout, 'p\n');
      const x = await api.runCode(a.id, { code: 'x' });
      assert.equal(x.error?.type, 'NameError', 'Python state did not survive: a fresh REPL');
      assert.equal((await api.runCode(a.id, { code: 'y = 7' })).ok, true);

      // Its disk limit still holds; writes after the revival are kept by its forks.
      const big = await api.exec(a.id, { cmd: 'head -c 100M /dev/zero > /root/big; echo $?' });
      assert.notEqual(big.stdout.trim(), '0', `a 100 MB write into a 64 MB disk fails: ${big.stderr}`);
      await api.exec(a.id, { cmd: 'rm -f /root/big; echo after > /root/after.txt' });
      const again = await api.forkSandbox(a.id, { n: 1 });
      const grandchild = again.children[0]?.sandbox?.id ?? '';
      assert.equal((await cat(grandchild, '/root/after.txt')).stdout, 'after\n');
      assert.equal((await api.runCode(grandchild, { code: 'y' })).value, '7', 'forks carry the new state');
      assert.equal((await api.getSandbox(grandchild)).labels['forkbox.restarted'], undefined);

      // Its published port answers again, on the same host port.
      assert.deepEqual(await api.listPorts(a.id), [port]);
      await api.writeFile(a.id, '/srv/hello.txt', Buffer.from('back\n'));
      await api.exec(a.id, {
        cmd: 'python3 -m http.server 8000 --bind 127.0.0.1 --directory /srv >/dev/null 2>&1 &',
      });
      assert.equal(await getWhenUp(`http://${port.address}/hello.txt`), 'back\n');

      // The snapshot's holder is not revived: a restore stacks on its layers alone.
      const snap = await api.getSnapshot('rv-snap');
      assert.equal(snap.pythonState, false);
      const restored = await api.restoreSnapshot('rv-snap', { n: 1 });
      const r = restored.children[0]?.sandbox?.id ?? '';
      assert.equal((await cat(r, '/root/data.txt')).stdout, 'precious\n');

      // The revived child is no longer in its parent's pid namespace (the new fork is): once that fork
      // is gone, killing the parent leaves no tombstone waiting for the revived child.
      await api.killSandbox(grandchild);
      const killed = await api.killSandbox(a.id);
      assert.equal(killed.state, 'killed');
      assert.doesNotMatch(killed.endReason ?? '', /PID 1 stays/);
      assert.equal((await cat(child, '/root/child.txt')).stdout, 'mine\n', 'the child lives on');
    } finally {
      await opened.close({ killSandboxes: true });
      const left = mountsUnder(stateDir);
      rmSync(stateDir, { recursive: true, force: true });
      assert.deepEqual(left, [], 'nothing left mounted');
    }
  });
});
