/**
 * Attack: make the host's copy of a sandbox's files follow a link out of them. With the copy storage
 * driver, `fork` and `snapshot create` froze only the sandbox's commands while host `cp -a` walked the
 * upper; a REPL thread swapping a directory and a symlink to a host path with renameat2(RENAME_EXCHANGE)
 * made root's cp copy 700 host files into the child, first try.
 * Precedent: the issue "Sandboxes that share nothing" (item 6, reproduced on this host); CVE-2018-15664
 * (`docker cp` symlink-exchange race); CVE-2021-30465 (runc mount destination swap).
 * Contained when: forks of a source whose REPL thread swaps all along (and a copy of an upper a host
 * process swaps under it) never carry a byte of the host directory the link points at.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createCopyDriver } from '../../src/runtimes/native/layers/snapshot-driver.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { token } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();
const MARK = token('HOSTFILE');
const NAMES = Array.from({ length: 600 }, (_, i) => `f${String(i).padStart(4, '0')}`);

/** A host directory of files holding MARK, named as the sandbox's own files are. */
function hostDir(base: string): string {
  const dir = join(base, 'host-secrets');
  mkdirSync(dir, { recursive: true });
  for (const n of NAMES) writeFileSync(join(dir, n), `${MARK}\n`);
  return dir;
}

const grepMark = (dir: string): string => {
  try {
    return execFileSync('grep', ['-rl', MARK, dir], { encoding: 'utf8' });
  } catch {
    return ''; // grep: nothing found
  }
};

describe('abuse: the copy driver and a symlink swapped during a fork', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let base: string;
  let secrets: string;

  before(async () => {
    mkdirSync('/var/tmp/forkbox-tests', { recursive: true });
    base = mkdtempSync('/var/tmp/forkbox-tests/copy-race-');
    secrets = hostDir(base);
    fx = await openNative({ storage: 'copy' });
    api = fx.opened.api;
  });
  after(async () => {
    await fx?.close();
    rmSync(base, { recursive: true, force: true });
  });

  it("forks of a source whose REPL thread swaps a directory and a link never carry the host's files", async () => {
    const src = (await api.createSandbox({ memoryMb: 512 })).id;
    const setup = await api.runCode(src, {
      code: [
        'import ctypes, os, threading',
        'os.makedirs("/tmp/race/d", exist_ok=True)',
        `for n in ${JSON.stringify(NAMES)}:`,
        '    open("/tmp/race/d/" + n, "w").write("mine\\n")',
        `os.symlink(${JSON.stringify(secrets)}, "/tmp/race/l")`,
        'libc = ctypes.CDLL(None, use_errno=True)',
        'swaps = 0',
        'def _swap():',
        '    global swaps',
        '    while True:',
        '        libc.renameat2(-100, b"/tmp/race/d", -100, b"/tmp/race/l", 2)  # RENAME_EXCHANGE',
        '        swaps += 1',
        'threading.Thread(target=_swap, daemon=True).start()',
      ].join('\n'),
    });
    assert.equal(setup.ok, true, JSON.stringify(setup.error));
    for (let round = 0; round < 6; round++) {
      const r = await api.forkSandbox(src, { n: 2, memoryMb: 64 });
      for (const c of r.children) {
        assert.equal(c.ok, true, c.error?.message);
        const id = c.sandbox?.id ?? '';
        const found = await api.exec(id, { cmd: `grep -rl ${MARK} /tmp/race/ 2>/dev/null | head -3; true` });
        assert.equal(found.stdout.toString(), '', `round ${round}: host files in ${id}`);
        await api.killSandbox(id);
      }
    }
    // Where sandboxes' files are kept (the database holds the commands above, which name the mark).
    for (const d of ['sandboxes', 'layers', 'disks'])
      assert.equal(grepMark(join(fx.stateDir, d)), '', `host files in ${d}/`);
    const swapped = await api.runCode(src, { code: 'swaps' });
    assert.ok(Number(swapped.value) > 100, `the thread swapped (${swapped.value} times)`);
  });

  it('a copy of an upper that a host process swaps under it never follows the link', async () => {
    const driver = createCopyDriver(join(base, 'layers'));
    mkdirSync(join(base, 'layers'), { recursive: true });
    const upper = join(base, 'upper');
    mkdirSync(join(upper, 'd'), { recursive: true });
    for (const n of NAMES) writeFileSync(join(upper, 'd', n), 'mine\n');
    symlinkSync(secrets, join(upper, 'l'));
    let stop = false;
    const swapper = (async () => {
      // renameat2 is not in node:fs: swap by two renames through a third name, as fast as the loop goes.
      while (!stop) {
        try {
          renameSync(join(upper, 'd'), join(upper, 't'));
          renameSync(join(upper, 'l'), join(upper, 'd'));
          renameSync(join(upper, 't'), join(upper, 'l'));
        } catch {
          // the copy holds a name for a moment
        }
        await new Promise((r) => setImmediate(r));
      }
    })();
    try {
      for (let i = 0; i < 10; i++) {
        const layer = await driver.freeze(upper).catch(() => null);
        if (layer) assert.equal(grepMark(layer), '', `copy ${i} followed the link`);
      }
    } finally {
      stop = true;
      await swapper;
    }
  });
});
