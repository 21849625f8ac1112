/**
 * The container image's files agree with each other (the image itself is built and run by
 * test/integration/container-image.test.ts): what the Dockerfile copies is in the build context
 * .dockerignore lets through, the packages scripts/build-container.sh puts in its debootstrap base are
 * those the Dockerfile installs, and the Node.js it pins satisfies package.json's engines.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');
const dockerfile = read('Dockerfile');
const script = read('scripts/build-container.sh');

/** The Dockerfile's instructions with their continuation lines joined. */
function instructions(): string[] {
  return dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#'));
}

describe('container image files', () => {
  it('every COPY from the build context passes .dockerignore', () => {
    const allowed = read('.dockerignore')
      .split('\n')
      .filter((l) => l.startsWith('!'))
      .map((l) => l.slice(1).replace(/\/$/, ''));
    const sources = instructions()
      .filter((l) => l.startsWith('COPY ') && !l.includes('--from='))
      .flatMap((l) => l.split(/\s+/).slice(1, -1));
    assert.ok(sources.length >= 5, `found the COPY lines: ${sources.join(' ')}`);
    for (const src of sources) {
      const ok = allowed.some((a) => src === a || src.startsWith(`${a}/`));
      assert.ok(ok, `Dockerfile copies ${src}, which .dockerignore leaves out`);
    }
  });

  it("the debootstrap base holds exactly the packages of the Dockerfile's final stage", () => {
    const install = instructions().filter((l) => l.includes('apt-get install'));
    const finalStage = install[install.length - 1] ?? '';
    const want = finalStage
      .slice(finalStage.indexOf('--no-install-recommends') + '--no-install-recommends'.length)
      .split('&&')[0]
      ?.trim()
      .split(/\s+/)
      .sort();
    const base = [...script.matchAll(/^PKGS\+?=\(([^)]*)\)/gm)]
      .flatMap((m) => (m[1] ?? '').trim().split(/\s+/))
      .sort();
    assert.deepEqual(base, want);
  });

  it("pins a Node.js that satisfies package.json's engines", () => {
    const m = /^ARG NODE_IMAGE=node:(\d+)\.(\d+)\.(\d+)-bookworm-slim$/m.exec(dockerfile);
    assert.ok(m, 'ARG NODE_IMAGE=node:<major>.<minor>.<patch>-bookworm-slim');
    const [major, minor] = [Number(m[1]), Number(m[2])];
    const engines = JSON.parse(read('package.json')).engines.node as string;
    const e = /^>=(\d+)\.(\d+)$/.exec(engines);
    assert.ok(e, `engines.node is '>=X.Y': ${engines}`);
    assert.ok(
      major > Number(e[1]) || (major === Number(e[1]) && minor >= Number(e[2])),
      `node ${m[1]}.${m[2]} < ${engines}`,
    );
  });
});
