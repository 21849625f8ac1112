/** util/subprocess.ts: the one way forkbox runs host programs, and its PATH search. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ForkboxError } from '../../src/domain/errors.ts';
import { requireTools, run, runOk, runSync, which } from '../../src/util/subprocess.ts';

const code = (c: string) => (e: unknown) => e instanceof ForkboxError && e.code === c;

test('run returns the exit status with stdout, stdin given, lines as they come; never rejects on exit', async () => {
  const lines: string[] = [];
  const r = await run('sh', ['-c', 'cat; echo err >&2; exit 3'], {
    input: 'a\nb',
    onLine: (l) => lines.push(l),
  });
  assert.equal(r.code, 3);
  assert.equal(r.stdout.toString(), 'a\nb');
  assert.equal(r.stderr, 'err\n');
  assert.deepEqual(lines.sort(), ['a', 'b', 'err']);
});

test('runOk and runSync fail with stderr on a non-zero exit; a missing program is requirement_missing', async () => {
  await assert.rejects(runOk('sh', ['-c', 'echo broke >&2; exit 1']), (e: unknown) => {
    return code('internal')(e) && /broke/.test((e as Error).message);
  });
  assert.equal(runSync('sh', ['-c', 'echo out']), 'out\n');
  assert.throws(() => runSync('sh', ['-c', 'exit 2']), code('internal'));
  await assert.rejects(run('forkbox-no-such-program', []), code('requirement_missing'));
  assert.throws(
    () => runSync('forkbox-no-such-program', [], 'install it.'),
    (e: unknown) => {
      return code('requirement_missing')(e) && /install it\./.test((e as Error).message);
    },
  );
});

test('which searches the given PATH, then the sbin directories; requireTools names what is missing', () => {
  assert.equal(which('sh', '/nonexistent:/bin'), '/bin/sh');
  assert.equal(which('forkbox-no-such-program', '/bin'), null);
  // Not on the PATH given, found in /usr/sbin or /sbin (where a root daemon's PATH may lack it).
  const sbin = which('ldconfig', '/nonexistent');
  assert.ok(sbin === '/usr/sbin/ldconfig' || sbin === '/sbin/ldconfig', String(sbin));
  requireTools(['sh']);
  assert.throws(() => requireTools(['sh', 'forkbox-no-such-program']), code('requirement_missing'));
});
