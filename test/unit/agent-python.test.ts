/**
 * The agent's own unit tests (Python's unittest, test/agent/test_*.py: framing, bounds, output capture,
 * path checks), run here so `npm test` runs them: each Python test is one subtest, and a failure, an
 * error or a skip in Python fails it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { agentBoundsEnv } from '../../src/domain/limits.ts';

const AGENT = fileURLToPath(new URL('../../src/agent/', import.meta.url));
const TESTS = fileURLToPath(new URL('../agent/', import.meta.url));

describe("the agent's Python unit tests", () => {
  const modules = readdirSync(TESTS).filter((n) => /^test_\w+\.py$/.test(n));

  it('exist', () => assert.ok(modules.length >= 4, modules.join()));

  for (const file of modules) {
    it(file, () => {
      const r = spawnSync('python3', ['-B', '-m', 'unittest', '-v', file.replace(/\.py$/, '')], {
        cwd: TESTS,
        encoding: 'utf8',
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          PYTHONPATH: AGENT,
          FORKBOX_BOUNDS: agentBoundsEnv(),
        },
        timeout: 60_000,
      });
      assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /^Ran [1-9]\d* tests? in /m, r.stderr);
      assert.doesNotMatch(r.stderr, /skipped/, r.stderr);
    });
  }
});
