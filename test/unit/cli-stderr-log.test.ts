/** The CLI's own log lines (src/cli/output/stderr-log.ts): FORKBOX_LOG_LEVEL's threshold and the line format. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createStderrLog } from '../../src/cli/output/stderr-log.ts';

function capture(level: string | undefined) {
  const lines: string[] = [];
  const log = createStderrLog(level, (l) => lines.push(l));
  log.debug('d');
  log.info({ stateDir: '/s' }, 'starting the forkbox daemon');
  log.warn('w');
  log.error({ code: 7 }, 'e');
  return lines;
}

test('warn by default: the launcher’s info lines stay quiet', () => {
  const saved = process.env.FORKBOX_LOG_LEVEL;
  delete process.env.FORKBOX_LOG_LEVEL;
  try {
    assert.deepEqual(capture(undefined), capture('warn'));
  } finally {
    if (saved !== undefined) process.env.FORKBOX_LOG_LEVEL = saved;
  }
  assert.deepEqual(capture('warn'), ['forkbox: warn: w\n', 'forkbox: error: e {"code":7}\n']);
});

test('info and debug show more, with the fields as JSON after the message', () => {
  assert.deepEqual(capture('info'), [
    'forkbox: info: starting the forkbox daemon {"stateDir":"/s"}\n',
    'forkbox: warn: w\n',
    'forkbox: error: e {"code":7}\n',
  ]);
  assert.equal(capture('debug').length, 4);
  assert.equal(capture('trace').length, 4);
});

test('silent prints nothing; an unknown level is taken as warn', () => {
  assert.deepEqual(capture('silent'), []);
  assert.deepEqual(capture('loud'), capture('warn'));
});
