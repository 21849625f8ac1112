/**
 * The user's project in a sandbox (docs/STORAGE.md, "Project directories"), through the real CLI against a
 * real daemon started with `--project-root`: a project of 2,000 small files and a binary file, owned by a
 * non-root uid, appears at /work with its contents and owners; edits, new and deleted files show in
 * `diff --project`; `export --patch` applies with `git apply` on a clean copy; the host directory is
 * byte-for-byte unchanged until `apply`, which refuses when the host changed a changed file since; a
 * fork's child sees the project and its own edits only.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, lstatSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { DiffResult, ForkResult, SandboxInfo } from '../../src/service/api.ts';
import { type Cli, cliFor } from '../helpers/cli.ts';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';
import { FILES, makeProject, OWNER, treeDigest } from '../helpers/project.ts';

const skip = nativeUnavailable();

describe('a project directory in a sandbox', { skip: skip ?? false }, () => {
  let stateDir: string;
  let daemon: ServedDaemon | undefined;
  let cli: Cli;
  let root: string;
  let project: string;
  let id: string;
  let before0: string;

  const sh = (sb: string, cmd: string) => cli.ok('exec', sb, '--', 'sh', '-c', cmd);

  before(async () => {
    stateDir = makeStateDir();
    root = `${stateDir}-projects`;
    project = join(root, 'app');
    makeProject(project);
    before0 = treeDigest(project);
    daemon = await startServe(stateDir, ['--project-root', root]);
    cli = cliFor(stateDir);
    id = cli.json<SandboxInfo>('create', '--project', project).id;
  });
  after(async () => {
    await stopServeAndClean(daemon?.child, stateDir);
    rmSync(root, { recursive: true, force: true });
  });

  it('appears at /work at once, with its contents and its owner', () => {
    assert.equal(sh(id, 'find /work -type f | wc -l').trim(), String(FILES + 2));
    assert.equal(sh(id, 'cat /work/pkg7/m42.py'), '# module 7.42\nVALUE = 7042\n');
    assert.equal(sh(id, 'stat -c %u:%g /work /work/README.md /work/pkg3/m1.py'), '1000:1000\n'.repeat(3));
    assert.equal(sh(id, 'od -An -tx1 /work/logo.bin').replace(/\s+/g, ''), '89504e47000000010203ff');
  });

  it('edits, new and deleted files show in diff --project; the host directory is unchanged', () => {
    sh(
      id,
      [
        "printf 'line one\\nline 2\\nline three\\n' > /work/README.md",
        'echo "NEW = 1" > /work/pkg0/new.py',
        'rm /work/pkg1/m5.py',
        'printf "\\377\\000\\001" >> /work/logo.bin',
        'chown 1000:1000 /work/pkg0/new.py',
        'mv /work/pkg2/m7.py /work/pkg2/moved.py',
      ].join(' && '),
    );
    const d = cli.json<DiffResult>('diff', id, '--project');
    assert.deepEqual(
      d.added.map((e) => e.path),
      ['/pkg0/new.py'],
    );
    assert.deepEqual(
      d.removed.map((e) => e.path),
      ['/pkg1/m5.py'],
    );
    assert.deepEqual(d.modified.map((e) => e.path).sort(), ['/README.md', '/logo.bin']);
    assert.deepEqual(
      d.renamed?.map((r) => [r.from, r.to]),
      [['/pkg2/m7.py', '/pkg2/moved.py']],
    );
    assert.match(cli.ok('diff', id, '--project'), /R +\/pkg2\/m7\.py → \/pkg2\/moved\.py/);
    const text = cli.ok('diff', id, '--project', '--unified', '/README.md');
    assert.match(text, /-line two\n\+line 2\n/);
    assert.equal(treeDigest(project), before0, 'the sandbox wrote nothing to the host directory');
  });

  it('export --patch applies with git apply on a clean copy', () => {
    const clean = `${root}/clean`;
    cpSync(project, clean, { recursive: true });
    const patchFile = `${root}/changes.patch`;
    cli.ok('export', id, '--patch', '-o', patchFile);
    const patch = readFileSync(patchFile, 'utf8');
    assert.match(patch, /GIT binary patch/);
    assert.match(patch, /similarity index 100%\nrename from pkg2\/m7\.py\nrename to pkg2\/moved\.py\n/);
    const r = spawnSync('git', ['apply', patchFile], { cwd: clean, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(readFileSync(join(clean, 'README.md'), 'utf8'), 'line one\nline 2\nline three\n');
    assert.equal(readFileSync(join(clean, 'pkg0/new.py'), 'utf8'), 'NEW = 1\n');
    assert.equal(lstatSync(join(clean, 'pkg1/m5.py'), { throwIfNoEntry: false }), undefined);
    assert.equal(lstatSync(join(clean, 'pkg2/m7.py'), { throwIfNoEntry: false }), undefined);
    assert.equal(readFileSync(join(clean, 'pkg2/moved.py'), 'utf8'), '# module 2.7\nVALUE = 2007\n');
    assert.deepEqual(
      [...readFileSync(join(clean, 'logo.bin'))],
      [0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 1, 2, 3, 0xff, 0xff, 0, 1],
    );
    // The stdout form is the same patch.
    assert.equal(cli.ok('export', id, '--patch'), patch);
    assert.equal(treeDigest(project), before0);
  });

  it("a fork's child sees the project with its source's edits, then only its own", () => {
    const r = cli.json<ForkResult>('fork', id);
    const kid = r.children[0]?.sandbox?.id;
    assert.ok(kid, JSON.stringify(r));
    assert.equal(sh(kid, 'sed -n 2p /work/README.md'), 'line 2\n');
    assert.equal(sh(kid, 'test -e /work/pkg1/m5.py || echo gone'), 'gone\n');
    assert.equal(sh(kid, 'cat /work/pkg9/m99.py'), '# module 9.99\nVALUE = 9099\n');
    sh(kid, 'echo child > /work/child.txt');
    sh(id, 'echo parent > /work/parent.txt');
    assert.equal(sh(kid, 'test -e /work/parent.txt || echo absent'), 'absent\n');
    assert.equal(sh(id, 'test -e /work/child.txt || echo absent'), 'absent\n');
    const kd = cli.json<DiffResult>('diff', kid, '--project');
    assert.ok(kd.added.some((e) => e.path === '/child.txt'));
    assert.ok(!kd.added.some((e) => e.path === '/parent.txt'));
    cli.ok('kill', kid);
    sh(id, 'rm /work/parent.txt');
    assert.equal(treeDigest(project), before0);
  });

  it('a snapshot carries the project and the edits; a restore sees both', () => {
    const src = cli.json<SandboxInfo>('create', '--project', project).id;
    sh(src, 'echo snap > /work/snap.txt');
    cli.ok('snapshot', 'create', src, '--name', 'proj-snap');
    sh(src, 'rm /work/snap.txt');
    const r = cli.json<ForkResult>('snapshot', 'restore', 'proj-snap');
    const restored = r.children[0]?.sandbox?.id;
    assert.ok(restored, JSON.stringify(r));
    assert.equal(sh(restored, 'cat /work/snap.txt /work/pkg5/m5.py'), 'snap\n# module 5.5\nVALUE = 5005\n');
    const d = cli.json<DiffResult>('diff', restored, '--project');
    assert.deepEqual(
      d.added.map((e) => e.path),
      ['/snap.txt'],
    );
    cli.ok('kill', restored, src);
    cli.ok('snapshot', 'rm', 'proj-snap');
  });

  it('apply refuses when the host changed a changed file since, and writes nothing', () => {
    const readme = join(project, 'README.md');
    writeFileSync(readme, 'edited on the host\n');
    const changed = treeDigest(project);
    const err = cli.fails(4, 'apply', id);
    assert.match(err, /changed on the host since.*\/README\.md/);
    assert.equal(treeDigest(project), changed, 'nothing was applied');
  });

  it('apply writes the changes back once the host is as it was', () => {
    const fresh = cli.json<SandboxInfo>('create', '--project', project).id;
    sh(
      fresh,
      'echo "x = 2" > /work/pkg2/m3.py && mkdir /work/docs && echo hi > /work/docs/a.md && rm /work/pkg4/m4.py',
    );
    const r = cli.json<{ written: string[]; removed: string[] }>('apply', fresh);
    assert.deepEqual(r.written.sort(), ['/docs', '/docs/a.md', '/pkg2/m3.py']);
    assert.deepEqual(r.removed, ['/pkg4/m4.py']);
    assert.equal(readFileSync(join(project, 'pkg2/m3.py'), 'utf8'), 'x = 2\n');
    assert.equal(readFileSync(join(project, 'docs/a.md'), 'utf8'), 'hi\n');
    assert.equal(
      lstatSync(join(project, 'docs/a.md')).uid,
      OWNER,
      'new files take their host parent’s owner',
    );
    assert.equal(lstatSync(join(project, 'pkg4/m4.py'), { throwIfNoEntry: false }), undefined);
    // Applied: the host now matches the sandbox, so nothing is left to apply (and nothing conflicts).
    assert.deepEqual(cli.json<{ written: string[]; removed: string[] }>('apply', fresh), {
      ...r,
      written: [],
      removed: [],
    });
  });
});
