/**
 * Attack: a sandbox makes files that come out privileged or strange on the host. `forkbox apply` re-applied
 * mode 4755 to a file the sandbox made, leaving a setuid-root binary in the host project (a host user then
 * ran `./rootsh -p` with euid 0); a FIFO, socket or device made in the project, or a symlink out of it, is
 * the same kind of door; `export --patch` wrote a name holding a newline raw, so `git apply` rejected it.
 * Precedent: the issue "Sandboxes that share nothing" (item 5, reproduced on this host); `docker cp`
 * (CVE-2019-14271, CVE-2018-15664) and tar's `--no-same-permissions` default for non-root extraction.
 * Contained when: after `apply`, no file or directory it wrote has a setuid, setgid or sticky bit, nothing
 * it wrote is a device, FIFO or socket, a symlink is written as a symlink and never followed, files copied
 * out with `cp` have no such bits either, and a patch of names with a newline, a tab, a quote and non-ASCII
 * bytes applies with `git apply`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Copied, pullDir, pullFile } from '../../src/cli/cp-pull.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import { makeProject } from '../helpers/project.ts';

const skip = nativeUnavailable();
const SPECIAL = 0o7000;

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = join(dir, d.name);
    return d.isDirectory() && !d.isSymbolicLink() ? [p, ...walk(p)] : [p];
  });
}

describe('abuse: nothing a sandbox made comes out privileged', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let root: string;
  let project: string;
  let id: string;

  before(async () => {
    mkdirSync('/var/tmp/forkbox-tests', { recursive: true });
    root = mkdtempSync('/var/tmp/forkbox-tests/priv-out-');
    project = join(root, 'app');
    makeProject(project);
    fx = await openNative({ projectRoots: [root] });
    api = fx.opened.api;
    id = (await api.createSandbox({ project })).id;
    const r = await api.exec(id, {
      cmd: [
        'cd /work',
        'cp /bin/bash rootsh && chmod 4755 rootsh',
        'cp /bin/bash groupsh && chmod 2755 groupsh',
        'mkdir -p sticky && chmod 1777 sticky && mkdir -p setgid-dir && chmod 2775 setgid-dir',
        'mkfifo fifo',
        'python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.bind(\'sock\')"',
        'ln -s /etc/shadow shadow-link',
        'ln -s ../../.. up-link',
      ].join(' && '),
    });
    assert.equal(r.exitCode, 0, r.stderr.toString());
  });
  after(async () => {
    await fx?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('apply writes no setuid, setgid or sticky bit, no FIFO, socket or device, and links as links', async () => {
    const res = await api.applyProject(id);
    assert.ok(res.written.includes('/rootsh'), JSON.stringify(res));
    for (const p of walk(project)) {
      const st = lstatSync(p);
      assert.equal(st.mode & SPECIAL, 0, `${p} has mode ${(st.mode & 0o7777).toString(8)}`);
      assert.ok(st.isFile() || st.isDirectory() || st.isSymbolicLink(), `${p} is a special file`);
    }
    assert.equal(lstatSync(join(project, 'shadow-link')).isSymbolicLink(), true, 'a symlink stays one');
    assert.equal(lstatSync(join(project, 'up-link')).isSymbolicLink(), true);
    assert.equal(lstatSync(join(project, 'rootsh')).mode & 0o777, 0o755, 'the other bits are kept');
  });

  it("cp out (the CLI's copy code) of a setuid file or a setgid tree gives plain ones", async () => {
    const dst = join(root, 'out');
    mkdirSync(dst);
    const c: Copied = { files: 0, dirs: 0, bytes: 0, skipped: [], maxBytes: 1 << 30 };
    const st = await api.statFile(id, '/work/rootsh');
    await pullFile(api, id, '/work/rootsh', join(dst, 'rootsh'), st.mode, c);
    await api.exec(id, {
      cmd: 'cp /work/rootsh /work/setgid-dir/inner && chmod 6755 /work/setgid-dir/inner',
    });
    await pullDir(api, id, '/work/setgid-dir', join(dst, 'tree'), c);
    for (const p of [join(dst, 'rootsh'), join(dst, 'tree'), join(dst, 'tree', 'inner')])
      assert.equal(lstatSync(p).mode & SPECIAL, 0, `${p}: ${(lstatSync(p).mode & 0o7777).toString(8)}`);
  });

  it('export --patch quotes names as git does: git apply takes them', async () => {
    const names = ['new\nline.txt', 'tab\there.txt', 'quote"d.txt', 'back\\slash.txt', 'caf\u00e9.txt'];
    for (const n of names) await api.writeFile(id, `/work/${n}`, Buffer.from(`${JSON.stringify(n)}\n`));
    const d = await api.diffSandboxes(id, id, { project: true, patch: true });
    const copy = join(root, 'copy');
    spawnSync('cp', ['-a', join(root, 'app'), copy]);
    for (const n of names) rmSync(join(copy, n), { force: true });
    writeFileSync(join(root, 'p.patch'), d.patch ?? '');
    const r = spawnSync('git', ['apply', '--unsafe-paths', '-p1', join(root, 'p.patch')], {
      cwd: copy,
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, `git apply: ${r.stderr}\n${d.patch?.slice(0, 2000)}`);
    for (const n of names) assert.equal(lstatSync(join(copy, n)).isFile(), true, JSON.stringify(n));
  });
});
