import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StreamCollector, tailBudget } from '../../src/runtimes/native/agent-link/output.ts';

describe('agent output streams (head, marker, tail)', () => {
  it('passes a short stream through whole', () => {
    const c = new StreamCollector('stdout');
    c.addHead(Buffer.from('hello\n'));
    const { data, summary } = c.finish({ stdout_total: 6, stdout_file: null });
    assert.equal(data.toString(), 'hello\n');
    assert.deepEqual(summary, { totalBytes: 6, shownBytes: 6, omittedBytes: 0, file: null, spooledBytes: 0 });
  });

  it('puts a marker naming the omitted bytes and the spool file between head and tail', () => {
    const c = new StreamCollector('stderr');
    c.addHead(Buffer.from('HEAD'));
    c.addTail(Buffer.from('TAIL'));
    const { data, summary } = c.finish({
      stderr_total: 1000,
      stderr_file: '/tmp/.forkbox-output/ex-1.stderr',
      stderr_spooled: 1000,
    });
    assert.match(
      data.toString(),
      /^HEAD\n\[forkbox: 992 bytes of stderr omitted here; the whole stderr is in \/tmp\/\.forkbox-output\/ex-1\.stderr inside the sandbox/,
    );
    assert.ok(data.toString().endsWith(']\nTAIL'));
    assert.deepEqual(summary, {
      totalBytes: 1000,
      shownBytes: 8,
      omittedBytes: 992,
      file: '/tmp/.forkbox-output/ex-1.stderr',
      spooledBytes: 1000,
    });
  });

  it('says which bytes were not kept when the spool file reached its cap', () => {
    const c = new StreamCollector('stdout');
    c.addHead(Buffer.from('HEAD'));
    c.addTail(Buffer.from('TAIL'));
    const { data, summary } = c.finish({
      stdout_total: 1000,
      stdout_file: '/tmp/.forkbox-output/ex-2.stdout',
      stdout_spooled: 600,
    });
    assert.match(
      data.toString(),
      /992 bytes of stdout omitted here; bytes 0-600 of stdout are in \/tmp\/\.forkbox-output\/ex-2\.stdout inside the sandbox \(read it in pages\); bytes 600-996 were not kept .*the last 4 bytes follow\]\nTAIL$/,
    );
    assert.doesNotMatch(data.toString(), /whole/);
    assert.equal(summary.spooledBytes, 600);
  });

  it('does not trust an agent that reports less than it sent, or a relative file', () => {
    const c = new StreamCollector('stdout');
    c.addHead(Buffer.alloc(50));
    const { summary } = c.finish({ stdout_total: 3, stdout_file: '../../etc/passwd', stdout_spooled: 9e9 });
    assert.equal(summary.totalBytes, 50);
    assert.equal(summary.omittedBytes, 0);
    assert.equal(summary.file, null);
    assert.equal(summary.spooledBytes, 0);
  });

  it('says the middle is lost when nothing was spooled', () => {
    const c = new StreamCollector('stdout');
    c.addHead(Buffer.from('a'));
    assert.match(
      c.finish({ stdout_total: 10 }).data.toString(),
      /9 bytes of stdout omitted here; it was not kept/,
    );
  });

  it('splits the budget into a head and a tail of at most 64 KiB', () => {
    assert.equal(tailBudget(1000), 250);
    assert.equal(tailBudget(16 * 1024 * 1024), 64 * 1024);
  });
});
