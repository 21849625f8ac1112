/**
 * Attack: rewriting the agent's runtime from a sandbox of an image without python3. There the agent runs
 * on the default image's Python, whose root layer is bind-mounted at /.forkbox/runtime — the very layer
 * every default-image sandbox on the host stacks on, and whose files belong to container root. A command
 * tries to write, remove and chmod files in it, remount it read-write, unmount it, and write through
 * /proc/1/exe (PID 1's executable: the runtime's loader), then `code_run` tries to get Python code into the
 * agent's worker, which holds CAP_SYS_ADMIN for forking.
 * Precedent: CVE-2019-5736 (a container overwrote the host's runc binary through /proc/self/exe).
 * Contained when: every write fails (a read-only, nosuid, nodev bind; commands hold no CAP_SYS_ADMIN; PID 1
 * is not dumpable), `code_run` is refused before any code reaches the worker, and the host's layer files
 * are unchanged.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isForkboxError } from '../../src/domain/errors.ts';
import { resolveInRoot } from '../../src/runtimes/native/container/agent-runtime.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { openSqliteStore } from '../../src/storage/sqlite/open-sqlite-store.ts';
import { defaultImage, type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();

/** The files an attack would go for in the runtime's layer: the python binary, the loader, os.py. */
function targetsIn(layer: string): string[] {
  const python = resolveInRoot(layer, defaultImage().python ?? '/usr/bin/python3');
  const loader = resolveInRoot(
    layer,
    process.arch === 'arm64' ? '/lib/ld-linux-aarch64.so.1' : '/lib64/ld-linux-x86-64.so.2',
  );
  assert.ok(python && loader, 'the default image has python3 and a loader');
  return [python, loader, `usr/lib/${python.split('/').pop()}/os.py`];
}

function fingerprint(layer: string, targets: string[]): string[] {
  return targets.map((t) => {
    const p = join(layer, t);
    const st = statSync(p);
    return `${t} ${createHash('sha256').update(readFileSync(p)).digest('hex')} ${st.mode.toString(8)} ${st.uid}`;
  });
}

function busyboxRoot(work: string): string {
  const root = join(work, 'busybox');
  mkdirSync(join(root, 'bin'), { recursive: true });
  mkdirSync(join(root, 'tmp'), { mode: 0o1777 });
  copyFileSync('/bin/busybox', join(root, 'bin', 'busybox'));
  const list = spawnSync('/bin/busybox', ['--list-full'], { encoding: 'utf8' });
  assert.equal(list.status, 0, `/bin/busybox --list-full (install busybox-static): ${list.stderr}`);
  for (const applet of list.stdout.split('\n').filter((l) => l && l !== 'bin/busybox')) {
    mkdirSync(dirname(join(root, applet)), { recursive: true });
    symlinkSync('/bin/busybox', join(root, applet));
  }
  return root;
}

describe('abuse: rewriting the agent runtime of an image without python3', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let work: string;
  let id: string;
  let layer: string;
  let before0: string[];
  let targets: string[];

  before(async () => {
    work = mkdtempSync('/var/tmp/fbx-runtime-abuse-');
    fx = await openNative();
    api = fx.opened.api;
    await api.importImage('busybox', busyboxRoot(work));
    layer = defaultImage().layers[0] ?? assert.fail('the default image has a layer');
    targets = targetsIn(layer);
    before0 = fingerprint(layer, targets);
    id = (await api.createSandbox({ image: 'busybox' })).id;
  });
  after(async () => {
    await fx?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('a command can neither write, remove, chmod, remount nor unmount the runtime, nor write /proc/1/exe', async () => {
    const steps = targets
      .flatMap((t) => [
        `echo pwned > /.forkbox/runtime/${t}`,
        `rm -f /.forkbox/runtime/${t}`,
        `chmod 777 /.forkbox/runtime/${t}`,
      ])
      .concat([
        'touch /.forkbox/runtime/usr/bin/evil',
        'mount -o remount,rw /.forkbox/runtime',
        'mount -o remount,rw,bind /.forkbox/runtime',
        'umount /.forkbox/runtime',
        'umount -l /.forkbox/runtime',
        'echo pwned > /proc/1/exe',
      ]);
    for (const step of steps) {
      const r = await api.exec(id, { argv: ['sh', '-c', step] });
      assert.notEqual(r.exitCode, 0, `'${step}' must fail: ${r.stdout}${r.stderr}`);
    }
    // The runtime is still there and mounted (umount failed), so the agent keeps serving.
    const r = await api.exec(id, {
      argv: ['sh', '-c', `test -x /.forkbox/runtime/${targets[0]} && echo ok`],
    });
    assert.equal(r.stdout, 'ok\n');
    assert.deepEqual(fingerprint(layer, targets), before0, "the host's layer files are unchanged");
  });

  it('code_run never reaches the worker that holds CAP_SYS_ADMIN', async () => {
    await assert.rejects(
      api.runCode(id, { code: `open('/.forkbox/runtime/${targets[2]}', 'a').write('#')` }),
      (e) => isForkboxError(e) && e.code === 'requirement_missing' && /has no python3/.test(e.message),
    );
    // Past the engine's check, straight to the runtime: the agent itself refuses (`no_python`).
    const store = openSqliteStore({ path: join(fx.stateDir, 'forkbox.db') });
    const rec = store.getSandbox(id);
    store.close();
    assert.ok(rec, 'the sandbox record');
    await assert.rejects(
      fx.opened.runtime.replEval(rec, `open('/.forkbox/runtime/${targets[2]}', 'a').write('#')`, {
        timeoutMs: 0,
      }),
      (e) => isForkboxError(e) && e.code === 'requirement_missing' && e.details?.agentCode === 'no_python',
    );
    assert.deepEqual(fingerprint(layer, targets), before0);
  });
});
