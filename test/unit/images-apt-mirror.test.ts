import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { isForkboxError } from '../../src/domain/errors.ts';
import { readAptMirror } from '../../src/images/index.ts';

const roots: string[] = [];
after(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

/** A fake root holding the given files under etc/apt. */
function fakeRoot(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'fbx-apt-'));
  roots.push(root);
  mkdirSync(join(root, 'etc/apt/sources.list.d'), { recursive: true });
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, 'etc/apt', rel)), { recursive: true });
    writeFileSync(join(root, 'etc/apt', rel), text);
  }
  return root;
}

const noEnv = {};

test('deb822: picks the entry whose Suites hold exactly the suite, skipping security and third parties', () => {
  const root = fakeRoot({
    // Sorted before debian.sources: must be skipped on its suite name, not its position.
    'sources.list.d/aaa-nodesource.sources':
      'Types: deb\nURIs: https://nodesource.example.invalid/node_20.x\nSuites: nodistro\nComponents: main\n',
    'sources.list.d/debian.sources': [
      'Types: deb',
      'URIs: http://security.example.invalid/debian-security',
      'Suites: bookworm-security',
      'Components: main',
      '',
      '# a comment line',
      'Types: deb-src deb',
      'URIs: http://mirror.example.invalid/debian/',
      'Suites: bookworm bookworm-updates',
      'Components: main contrib',
      'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg',
      '',
    ].join('\n'),
  });
  assert.equal(readAptMirror('bookworm', { root, env: noEnv }), 'http://mirror.example.invalid/debian');
});

test('deb822: Enabled: no and deb-src-only stanzas are ignored', () => {
  const root = fakeRoot({
    'sources.list.d/debian.sources': [
      'Types: deb',
      'URIs: http://disabled.example.invalid/debian',
      'Suites: bookworm',
      'Components: main',
      'Enabled: no',
      '',
      'Types: deb-src',
      'URIs: http://src.example.invalid/debian',
      'Suites: bookworm',
      'Components: main',
      '',
      'Types: deb',
      'URIs: http://good.example.invalid/debian',
      'Suites: bookworm',
      'Components: main',
    ].join('\n'),
  });
  assert.equal(readAptMirror('bookworm', { root, env: noEnv }), 'http://good.example.invalid/debian');
});

test('one-line format: skips -security, -updates, deb-src, comments and a cloud repo with its own suite', () => {
  const root = fakeRoot({
    'sources.list': [
      '# deb http://commented.example.invalid/debian bookworm main',
      'deb http://security.example.invalid/debian-security bookworm-security main',
      'deb-src http://src.example.invalid/debian bookworm main',
      'deb http://mirror.example.invalid/debian bookworm-updates main',
      'deb [arch=amd64 signed-by=/usr/share/keyrings/x.gpg] http://mirror.example.invalid/debian bookworm main contrib',
    ].join('\n'),
    'sources.list.d/google-cloud.list': 'deb https://cloud.example.invalid/apt cloud-sdk-bookworm main\n',
  });
  assert.equal(readAptMirror('bookworm', { root, env: noEnv }), 'http://mirror.example.invalid/debian');
  // The other suites are still found when asked for by name.
  assert.equal(
    readAptMirror('bookworm-security', { root, env: noEnv }),
    'http://security.example.invalid/debian-security',
  );
});

test('files apt does not read (e.g. *.disabled) are ignored', () => {
  const root = fakeRoot({
    'sources.list.d/old.list.disabled': 'deb http://old.example.invalid/debian bookworm main\n',
    'sources.list.d/z.list': 'deb http://z.example.invalid/debian bookworm main\n',
  });
  assert.equal(readAptMirror('bookworm', { root, env: noEnv }), 'http://z.example.invalid/debian');
});

test('a repo for the same suite without the main component is skipped', () => {
  const root = fakeRoot({
    'sources.list':
      'deb http://extra.example.invalid/debian bookworm non-free\ndeb http://main.example.invalid/debian bookworm main\n',
  });
  assert.equal(readAptMirror('bookworm', { root, env: noEnv }), 'http://main.example.invalid/debian');
});

test('FORKBOX_DEBIAN_MIRROR overrides the apt sources', () => {
  const root = fakeRoot({ 'sources.list': 'deb http://mirror.example.invalid/debian bookworm main\n' });
  assert.equal(
    readAptMirror('bookworm', {
      root,
      env: { FORKBOX_DEBIAN_MIRROR: 'http://override.example.invalid/debian/' },
    }),
    'http://override.example.invalid/debian',
  );
});

test('a clear requirement_missing error when nothing serves the suite', () => {
  const root = fakeRoot({
    'sources.list': 'deb http://mirror.example.invalid/debian bookworm-updates main\n',
    'sources.list.d/node.sources':
      'Types: deb\nURIs: https://n.example.invalid/node\nSuites: nodistro\nComponents: main\n',
  });
  assert.throws(
    () => readAptMirror('bookworm', { root, env: noEnv }),
    (e: unknown) =>
      isForkboxError(e) &&
      e.code === 'requirement_missing' &&
      e.message.includes("'bookworm'") &&
      e.message.includes('FORKBOX_DEBIAN_MIRROR'),
  );
  // No etc/apt at all: same clear error.
  const empty = mkdtempSync(join(tmpdir(), 'fbx-apt-'));
  roots.push(empty);
  assert.throws(
    () => readAptMirror('trixie', { root: empty, env: noEnv }),
    /no apt source for the Debian suite 'trixie'/,
  );
});
