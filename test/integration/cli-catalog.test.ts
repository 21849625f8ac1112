/**
 * The CLI's catalog commands on the real thing — `bin/forkbox.js` against a real `forkbox serve` on a
 * fresh state dir: `templates define|ls|rm` (a sandbox from a template starts with its modules
 * imported), and `images import|ls|rm` of a small root filesystem tar built here.
 *
 * `images build` is not run to completion (a debootstrap of a whole Debian takes minutes and needs the
 * archive): its argument handling and the daemon's refusals of a bad suite and a bad package name are
 * tested against the real daemon instead; the build itself is what `npm run setup` does.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ImageRecord } from '../../src/domain/types.ts';
import type { SandboxInfo, TemplateInfo } from '../../src/service/api.ts';
import { type Cli, cliFor } from '../helpers/cli.ts';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';

const skip = nativeUnavailable();
/** A standard-library module the agent does not import by itself (checked below). */
const MODULE = 'colorsys';

describe('CLI catalog commands against a real daemon', { skip: skip ?? false }, () => {
  let stateDir: string;
  let daemon: ServedDaemon | undefined;
  let cli: Cli;
  let work: string;

  before(async () => {
    stateDir = makeStateDir();
    daemon = await startServe(stateDir);
    cli = cliFor(stateDir);
    work = mkdtempSync(join(tmpdir(), 'fbx-cli-images-'));
  });
  after(async () => {
    rmSync(work, { recursive: true, force: true });
    await stopServeAndClean(daemon?.child, stateDir);
  });

  const imported = (id: string) => cli.ok('eval', id, `import sys; '${MODULE}' in sys.modules`).trim();

  it('templates: define, ls, create from one (modules pre-imported), rm refused while used, rm', () => {
    const plain = cli.json<SandboxInfo>('create');
    assert.equal(imported(plain.id), 'False', `${MODULE} is not imported without the template`);
    cli.ok('kill', plain.id);

    const t = cli.json<TemplateInfo>('templates', 'define', 'warm', '--prewarm', `json,${MODULE}`);
    assert.deepEqual(
      [t.name, t.image, [...t.prewarm].sort(), t.builtin],
      ['warm', 'debian', ['colorsys', 'json'], false],
    );
    const listed = cli.json<TemplateInfo[]>('templates', 'ls');
    assert.deepEqual(
      listed.map((x) => x.name),
      ['default', 'warm'],
    );
    assert.match(cli.ok('template', 'ls'), /^warm\s+debian\s+(json,colorsys|colorsys,json)\s+/m);

    const sb = cli.json<SandboxInfo>('create', '--template', 'warm');
    assert.equal(imported(sb.id), 'True', `${MODULE} was imported by the template`);
    assert.match(cli.fails(4, 'templates', 'rm', 'warm'), new RegExp(`used by 1 live sandbox.*${sb.id}`));
    cli.ok('kill', sb.id);
    assert.equal(cli.json<{ deleted: string }>('templates', 'rm', 'warm').deleted, 'warm');
    assert.deepEqual(
      cli.json<TemplateInfo[]>('templates', 'ls').map((x) => x.name),
      ['default'],
    );
    assert.match(cli.fails(3, 'create', '--template', 'warm'), /no template 'warm'/);
    assert.match(cli.fails(2, 'templates', 'rm', 'default'), /built-in template/);
    assert.match(
      cli.fails(2, 'templates', 'define', 'bad', '--prewarm', 'not a module'),
      /not a Python module name/,
    );
  });

  it('images import (relative path, progress), ls, a sandbox without python3 (no REPL), rm', () => {
    const root = join(work, 'rootfs');
    mkdirSync(join(root, 'etc'), { recursive: true });
    mkdirSync(join(root, 'usr', 'bin'), { recursive: true });
    writeFileSync(join(root, 'etc', 'motd'), 'a tiny image\n');
    symlinkSync('usr/bin', join(root, 'bin'));
    const tar = spawnSync('tar', ['-C', root, '-cf', join(work, 'tiny.tar'), '.'], { encoding: 'utf8' });
    assert.equal(tar.status, 0, tar.stderr);

    // The CLI sends the daemon an absolute path: a relative one is resolved in the caller's cwd.
    const r = cli.run(['images', 'import', 'tiny', 'tiny.tar'], { cwd: work });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^tiny \(\d+(\.\d)? (B|KiB)\)$/m);
    assert.match(r.stderr, /==> extracting: extracting .*tiny\.tar/);
    const images = cli.json<ImageRecord[]>('images', 'ls');
    const tiny = images.find((i) => i.name === 'tiny') ?? assert.fail('tiny is listed');
    assert.equal(tiny.source, `import:${join(work, 'tiny.tar')}`);
    assert.equal(tiny.python, null);
    assert.deepEqual(images.map((i) => i.name).sort(), ['debian', 'tiny']);
    assert.match(cli.ok('images', 'ls'), /^tiny\s+\S+ (B|KiB)\s+import:/m);
    const layer = tiny.layers[0] ?? assert.fail('tiny has a layer');
    assert.ok(existsSync(join(layer, 'etc', 'motd')), 'the layer holds the files');
    // Importing the same content under the same name is a no-op.
    assert.equal(cli.json<ImageRecord>('images', 'import', 'tiny', join(work, 'tiny.tar')).id, tiny.id);

    // No python3: the agent runs on the default image's, which never runs user code (docs/IMAGES.md).
    const sb = cli.json<SandboxInfo>('create', '--image', 'tiny');
    assert.match(
      cli.fails(10, 'eval', sb.id, '1 + 1'),
      /image 'tiny' has no python3, so it has no Python REPL/,
    );
    assert.match(cli.fails(4, 'images', 'rm', 'tiny'), new RegExp(`used by 1 live sandbox.*${sb.id}`));
    cli.ok('kill', sb.id);

    assert.equal(cli.ok('images', 'rm', 'tiny'), 'tiny\n');
    assert.ok(!existsSync(layer), 'its layer is gone');
    assert.deepEqual(
      cli.json<ImageRecord[]>('images', 'ls').map((i) => i.name),
      ['debian'],
    );
    assert.match(cli.fails(3, 'images', 'rm', 'tiny'), /tiny/);
    assert.match(cli.fails(3, 'images', 'import', 'gone', join(work, 'missing.tar')), /missing\.tar/);
  });

  it('images build: argument handling and the daemon’s refusals, without building', () => {
    assert.match(cli.fails(2, 'images', 'build', 'alpine'), /cannot build 'alpine' images yet/);
    assert.match(
      cli.fails(2, 'images', 'build', 'debian', '--suite', 'no such suite'),
      /invalid image build request: suite/,
    );
    assert.match(
      cli.fails(2, 'images', 'build', 'debian', '--packages', 'python3,bad;name'),
      /invalid image build request: packages/,
    );
    assert.match(cli.fails(2, 'images', 'build'), /missing required argument 'distro'/);
    // Nothing was built or registered.
    assert.deepEqual(
      cli.json<ImageRecord[]>('images', 'ls').map((i) => i.name),
      ['debian'],
    );
  });
});
