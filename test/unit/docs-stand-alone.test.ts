/**
 * The repository stands alone: no file refers to a design document or a shared folder that users of
 * the repository do not have. What they need is in docs/ (design decisions in docs/ARCHITECTURE.md).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = join(import.meta.dirname, '..', '..');
const SKIP = new Set(['node_modules', 'dist', '.git', '.tools', '.scratch', '.forkbox-test']);
// Built from parts so that this file does not match itself.
const OUTSIDE = [new RegExp(`${'DESIGN'}(\\.md| §| \\d)`), new RegExp(`\\.\\./${'shared'}\\b`)];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (SKIP.has(name)) return [];
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) return files(p);
    return st.isFile() && st.size < 1_000_000 && /\.(ts|mjs|js|py|md|json|sh|ya?ml)$/.test(name) ? [p] : [];
  });
}

describe('docs stand alone', () => {
  it('no file refers to a document outside the repository', () => {
    const all = files(ROOT);
    assert.ok(
      all.some((f) => f.endsWith(join('docs', 'ARCHITECTURE.md'))),
      'the walk reaches docs/',
    );
    const hits: string[] = [];
    for (const f of all) {
      const lines = readFileSync(f, 'utf8').split('\n');
      lines.forEach((line, i) => {
        if (OUTSIDE.some((re) => re.test(line)))
          hits.push(`${f.slice(ROOT.length + 1)}:${i + 1}: ${line.trim()}`);
      });
    }
    assert.deepEqual(hits, []);
  });
});
