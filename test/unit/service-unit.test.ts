/**
 * `forkbox service install --socket-group GROUP`: the unit file it writes (the daemon as root with the
 * group socket, sandboxes left running when the unit stops) and that systemd's own checker accepts it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { serviceUnit } from '../../src/cli/service-unit.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('forkbox service install', () => {
  it('writes a unit that runs serve --socket-group, and systemd-analyze verify accepts it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fbx-unit-'));
    try {
      const r = spawnSync(
        process.execPath,
        [
          join(ROOT, 'bin/forkbox.js'),
          '--state-dir',
          '/var/lib/forkbox',
          'service',
          'install',
          '--socket-group',
          'forkbox',
          '--unit-dir',
          dir,
        ],
        { encoding: 'utf8' },
      );
      assert.equal(r.status, 0, r.stderr);
      const path = join(dir, 'forkbox.service');
      const unit = readFileSync(path, 'utf8');
      assert.match(
        unit,
        new RegExp(
          `^ExecStart=${process.execPath} \\S+/bin/forkbox\\.js --state-dir /var/lib/forkbox serve --socket-group forkbox$`,
          'm',
        ),
      );
      assert.match(unit, /^RuntimeDirectory=forkbox$/m);
      assert.match(unit, /^KillMode=process$/m);
      assert.match(unit, /^WantedBy=multi-user\.target$/m);
      const v = spawnSync('systemd-analyze', ['verify', path], { encoding: 'utf8' });
      assert.equal(v.status, 0, v.stderr);
      assert.equal(v.stderr, '', 'no warnings');
      // The checker does catch a broken unit: the same file with an unknown key.
      writeFileSync(path, unit.replace('KillMode=process', 'KillMode=process\nKillMod=x'));
      const bad = spawnSync('systemd-analyze', ['verify', path], { encoding: 'utf8' });
      assert.match(bad.stderr, /KillMod/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses group names and paths that systemd or a shell would read', () => {
    const base = {
      node: '/usr/bin/node',
      entry: '/opt/forkbox/bin/forkbox.js',
      stateDir: '/var/lib/forkbox',
    };
    assert.throws(() => serviceUnit({ ...base, socketGroup: 'a b' }), /not a group name/);
    assert.throws(() => serviceUnit({ ...base, socketGroup: 'x;rm' }), /not a group name/);
    assert.throws(
      () => serviceUnit({ ...base, socketGroup: 'fb', stateDir: '/var/lib/fork box' }),
      /systemd unit/,
    );
    assert.throws(() => serviceUnit({ ...base, socketGroup: 'fb', stateDir: '/var/lib/%h' }), /systemd unit/);
  });
});
