/**
 * agentkernel's text rules: a result over 16,000 bytes keeps its first and last 8,000 around its
 * `[N bytes truncated]` marker without splitting a UTF-8 character, and its durations (`30m`, `1h`, `2d`,
 * bare seconds) become seconds; anything else is refused.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { durationSeconds } from '../../src/protocol/mcp/toolsets/agentkernel/shapes.ts';
import { truncateText } from '../../src/protocol/mcp/toolsets/agentkernel/tool.ts';

describe('agentkernel text results', () => {
  it('keeps a text of 16,000 bytes whole and cuts a longer one head + tail', () => {
    const edge = 'a'.repeat(16_000);
    assert.equal(truncateText(edge), edge);
    const long = `${'h'.repeat(10_000)}${'t'.repeat(10_000)}`;
    assert.equal(
      truncateText(long),
      `${'h'.repeat(8000)}\n\n... [4000 bytes truncated] ...\n\n${'t'.repeat(8000)}`,
    );
  });

  it('never splits a multi-byte character at either cut', () => {
    // 20,001 bytes: the head's cut at byte 8,000 falls inside an 'é' and moves back before it.
    const out = truncateText(`a${'é'.repeat(10_000)}`);
    assert.ok(!out.includes('\uFFFD'));
    assert.equal(out, `a${'é'.repeat(3999)}\n\n... [4001 bytes truncated] ...\n\n${'é'.repeat(4000)}`);
  });
});

describe('agentkernel durations', () => {
  it('reads s, m, h, d and bare seconds', () => {
    assert.equal(durationSeconds('90'), 90);
    assert.equal(durationSeconds('90s'), 90);
    assert.equal(durationSeconds('30m'), 1800);
    assert.equal(durationSeconds('1h'), 3600);
    assert.equal(durationSeconds('2d'), 172_800);
  });

  it('refuses zero, negatives, fractions and words', () => {
    for (const bad of ['0', '0h', '-1h', '1.5h', 'soon', '', '1w']) {
      assert.throws(() => durationSeconds(bad), /invalid duration/, bad);
    }
  });
});
