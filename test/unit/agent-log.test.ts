import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AGENT_LOG_BURST,
  AGENT_LOG_MAX_CHARS,
  AGENT_LOG_RATE_PER_S,
  createAgentLogRelay,
  sanitizeAgentText,
} from '../../src/runtimes/native/agent-link/agent-log.ts';

function recorder() {
  const lines: { level: string; fields: Record<string, unknown>; msg: string }[] = [];
  const at = (level: string) => (fields: object, msg?: string) =>
    lines.push({ level, fields: fields as Record<string, unknown>, msg: msg ?? '' });
  return { lines, log: { info: at('info'), warn: at('warn'), error: at('error') } };
}

describe('agent log relay (log frames from a sandbox)', () => {
  it('cuts, replaces control and bidi characters, keeps tabs and newlines', () => {
    assert.equal(sanitizeAgentText('a\tb\nc\x1b[31md\u202eе\x7f'), 'a\tb\nc\ufffd[31md\ufffdе\ufffd');
    assert.equal([...sanitizeAgentText('x'.repeat(5000))].length, AGENT_LOG_MAX_CHARS);
  });

  it('logs under a fixed message, never at error level; a malformed frame is refused', () => {
    const { lines, log } = recorder();
    const relay = createAgentLogRelay('sb1', log, () => 0);
    assert.equal(relay.take({ t: 'log', level: 'error', msg: 'forged {"level":50}', dropped: 3 }), true);
    assert.deepEqual(lines, [
      {
        level: 'warn',
        fields: { sandbox: 'sb1', agentLevel: 'error', text: 'forged {"level":50}', droppedByAgent: 3 },
        msg: 'sandbox agent log',
      },
    ]);
    assert.equal(relay.take({ t: 'log', msg: 42 }), false);
    assert.equal(relay.take({ t: 'log', msg: 'x'.repeat(70_000) }), false);
  });

  it('rate-limits per connection and reports what it suppressed with the next line', () => {
    const { lines, log } = recorder();
    let now = 0;
    const relay = createAgentLogRelay('sb1', log, () => now);
    for (let i = 0; i < AGENT_LOG_BURST + 10; i++) relay.take({ t: 'log', level: 'info', msg: `line ${i}` });
    assert.equal(lines.length, AGENT_LOG_BURST);
    now += 1000; // one second refills AGENT_LOG_RATE_PER_S tokens
    for (let i = 0; i < AGENT_LOG_RATE_PER_S + 1; i++) relay.take({ t: 'log', level: 'info', msg: 'later' });
    assert.equal(lines.length, AGENT_LOG_BURST + AGENT_LOG_RATE_PER_S);
    assert.equal(lines[AGENT_LOG_BURST]?.fields.droppedByHost, 10);
  });
});
