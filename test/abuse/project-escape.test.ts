/**
 * Attack: reaching host files through the project option, and writing to the user's project from inside.
 * A client asks for a project outside the daemon's project roots — `/etc`, a symlink under a root that
 * points to `/etc`, `../` out of a root — or for a system mount path; a daemon with no root is asked for
 * any project; a tenant of the TCP listener asks for one under a root; the host project directory is swapped for a symlink to `/etc` after the create, before a
 * fork mounts it again. Inside, root writes, deletes, chmods and chowns everything under /work, unmounts
 * /work and writes beneath it, and tries to remount it read-write.
 * Precedent: Docker bind mounts of host paths (CVE-2019-5736-style host writes, `-v /:/host`); symlink
 * races on mount sources (CVE-2021-30465, runc's mount destination swap); path traversal in MCP
 * filesystem servers (cyanheads/filesystem-mcp-server #21).
 * Contained when: every such create is refused (permission_denied / invalid_argument) naming what to do,
 * the fork over a swapped directory fails rather than mounting `/etc`, and the host project directory is
 * byte-for-byte unchanged after everything the sandbox did.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { rejectsWith } from '../helpers/assert-error.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import { makeProject, treeDigest } from '../helpers/project.ts';

const skip = nativeUnavailable();

describe('project directories cannot reach host files', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let root: string;
  let project: string;
  let digest: string;

  before(async () => {
    mkdirSync('/var/tmp/forkbox-tests', { recursive: true });
    root = mkdtempSync('/var/tmp/forkbox-tests/projects-');
    project = join(root, 'app');
    makeProject(project);
    digest = treeDigest(project);
    symlinkSync('/etc', join(root, 'etc-link'));
    fx = await openNative({ projectRoots: [root] });
    api = fx.opened.api;
  });
  after(async () => {
    await fx.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('refuses paths outside the roots, symlinks out of them, traversal and system mount paths', async () => {
    await rejectsWith(
      api.createSandbox({ project: '/etc' }),
      'permission_denied',
      /not under an allowed project root/,
    );
    await rejectsWith(api.createSandbox({ project: join(root, 'etc-link') }), 'permission_denied');
    await rejectsWith(api.createSandbox({ project: `${root}/../../etc` }), 'permission_denied');
    await rejectsWith(api.createSandbox({ project: `${root}/app/../../..` }), 'permission_denied');
    await rejectsWith(api.createSandbox({ project: 'relative/dir' }), 'invalid_argument');
    await rejectsWith(
      api.createSandbox({ project: `${project}:/etc` }),
      'invalid_argument',
      /system directory/,
    );
    await rejectsWith(api.createSandbox({ project: `${project}:/.forkbox/bin` }), 'invalid_argument');
    await rejectsWith(api.createSandbox({ project: `${project}:/work/../proc` }), 'invalid_argument');
    assert.equal((await api.listSandboxes()).length, 0, 'no refused create left a sandbox');
  });

  it("a remote tenant (the TCP listener's callers) is refused any project, even under a root", async () => {
    const remote = fx.opened.engine.scoped({ tenant: 'remote-t', remote: true });
    await rejectsWith(remote.createSandbox({ project }), 'permission_denied', /local socket/);
  });

  it('a daemon with no project root refuses every project, naming --project-root', async () => {
    const other = await openNative();
    try {
      await rejectsWith(other.opened.api.createSandbox({ project }), 'permission_denied', /--project-root/);
    } finally {
      await other.close();
    }
  });

  it('root inside cannot write to the host directory', async () => {
    const sb = await api.createSandbox({ project });
    const r = await api.exec(sb.id, {
      cmd: [
        'echo owned > /work/README.md',
        'chmod 777 /work/pkg0/m0.py && chown 0:0 /work/pkg0/m1.py',
        'rm -rf /work/pkg5 && echo new > /work/new.txt',
        'mount -o remount,rw /work 2>/dev/null; echo x > /work/pkg1/m1.py',
        'umount -l /work 2>/dev/null; echo under > /work/under.txt',
        'echo done',
      ].join('; '),
    });
    assert.match(r.stdout, /done/);
    assert.equal(treeDigest(project), digest, 'the host directory is byte-for-byte unchanged');
    await api.killSandbox(sb.id);
  });

  it('a project swapped for a symlink to /etc after the create is not mounted by a fork', async () => {
    const sb = await api.createSandbox({ project });
    renameSync(project, `${project}.moved`);
    symlinkSync('/etc', project);
    try {
      const f = await api.forkSandbox(sb.id, { n: 1 });
      assert.equal(f.children[0]?.ok, false, JSON.stringify(f.children[0]));
      assert.match(f.children[0]?.error?.message ?? '', /link to \/etc; forkbox will not follow it/);
    } finally {
      rmSync(project);
      renameSync(`${project}.moved`, project);
    }
    assert.equal(treeDigest(project), digest);
    await api.killSandbox(sb.id);
  });
});
