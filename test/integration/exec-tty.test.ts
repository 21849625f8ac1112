/**
 * A background exec under a pseudo-terminal on the real runtime (what the console's terminal runs): the
 * shell sees a terminal of the asked size on stdin, it is the shell's controlling terminal (^C interrupts
 * the foreground command, not the shell), a resize reaches `stty size`, output comes back as stdout with
 * the terminal's echo, and `exit` ends the exec. Refusals: resizing an exec without a terminal, and a
 * size out of bounds.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();

describe('execs under a pseudo-terminal', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id = '';

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    id = (await api.createSandbox({})).id;
  });
  after(async () => {
    await fx?.close();
  });

  /** A terminal session: keystrokes in, everything printed so far out (waits up to 15 s for `re`). */
  function session(execId: string) {
    let seq = -1;
    let seen = '';
    return {
      type: (s: string) => api.writeExecStdin(id, execId, Buffer.from(s)),
      async waitFor(re: RegExp): Promise<string> {
        const deadline = Date.now() + 15_000;
        while (!re.test(seen)) {
          assert.ok(Date.now() < deadline, `no ${re} in: ${JSON.stringify(seen.slice(-2000))}`);
          const p = await api.pollExec(id, execId, { afterSeq: seq, waitMs: 1000 });
          for (const ch of p.chunks) {
            seq = Math.max(seq, ch.seq);
            seen += ch.data;
          }
          if (p.done && !re.test(seen))
            assert.fail(`ended without ${re}: ${JSON.stringify(seen.slice(-2000))}`);
        }
        return seen;
      },
    };
  }

  it('runs a shell on a terminal of the asked size; resize, ^C and exit behave as in a terminal', async () => {
    const ex = await api.startExec(id, { argv: ['/bin/bash', '--norc', '-i'], tty: { rows: 24, cols: 80 } });
    const t = session(ex.id);
    await t.type('tty; stty size; test -t 0 && echo "is""atty"\n');
    const first = await t.waitFor(/isatty/);
    assert.match(first, /\/dev\/pts\/\d+/);
    assert.match(first, /\b24 80\b/);
    assert.match(first, /tty; stty size/, 'the terminal echoes what is typed');

    await api.resizeExec(id, ex.id, { rows: 40, cols: 132 });
    await t.type('stty size\n');
    await t.waitFor(/\b40 132\b/);

    // ^C goes to the foreground job (the terminal is the shell's controlling terminal): sleep ends, the
    // shell stays and answers.
    await t.type('sleep 300\n');
    await t.waitFor(/sleep 300/);
    await new Promise((r) => setTimeout(r, 300));
    await t.type('\x03');
    await t.waitFor(/\^C/);
    await t.type('echo "sleep-st""atus=$?"\n');
    await t.waitFor(/sleep-status=130/);

    await t.type('exit 7\n');
    const deadline = Date.now() + 15_000;
    let rec = (await api.pollExec(id, ex.id, { waitMs: 1000 })).exec;
    while (rec.state === 'running' && Date.now() < deadline) {
      rec = (await api.pollExec(id, ex.id, { afterSeq: 1e9, waitMs: 1000 })).exec;
    }
    assert.equal(rec.exitCode, 7, JSON.stringify(rec));
  });

  it('refuses to resize an exec without a terminal, and a size out of bounds', async () => {
    const ex = await api.startExec(id, { argv: ['sleep', '30'] });
    await assert.rejects(api.resizeExec(id, ex.id, { rows: 10, cols: 10 }), /no terminal/);
    await assert.rejects(
      api.startExec(id, { argv: ['true'], tty: { rows: 0, cols: 80 } }),
      (e: Error & { code?: string }) => e.code === 'invalid_argument' && /rows/.test(e.message),
    );
    await api.cancelExec(id, ex.id);
  });
});
