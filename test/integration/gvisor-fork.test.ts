/**
 * The gvisor runtime's fork carries every process (the Podflare flow): a server and a background job
 * started before the fork run in every child, each child's server answers from its own memory, each child
 * knows its own id, and the REPL's state is there — while the source runs on, diverging.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_LIMITS, type SandboxRecord } from '../../src/domain/types.ts';
import type { Runtime } from '../../src/service/ports.ts';
import { gvisorUnavailable, type NativeFixture, openNative } from '../helpers/native.ts';

// A server whose answer is its own request count: a child's count is the source's at the fork, then its own.
const SERVER = [
  'import http.server',
  'n = [0]',
  'class H(http.server.BaseHTTPRequestHandler):',
  '    def do_GET(self):',
  '        n[0] += 1',
  '        self.send_response(200); self.end_headers(); self.wfile.write(str(n[0]).encode())',
  '    def log_message(self, *a): pass',
  "http.server.HTTPServer(('127.0.0.1', 8000), H).serve_forever()",
].join('\n');
const GET = `python3 -c "import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:8000/').read().decode())"`;

describe('gvisor fork: every process is carried', () => {
  let fx: NativeFixture;
  let rt: Runtime;
  const made: SandboxRecord[] = [];
  const rec = (id: string, runtime: Record<string, unknown>): SandboxRecord =>
    ({ id, name: id, state: 'running', runtime }) as SandboxRecord;
  const sh = async (r: SandboxRecord, cmd: string) => {
    const res = await rt.exec(r, { cmd, timeoutMs: 20_000 }).result;
    assert.equal(res.exitCode, 0, res.stderr.toString());
    return res.stdout.toString().trim();
  };

  before(async () => {
    const why = gvisorUnavailable();
    assert.equal(why, null, `the gvisor runtime cannot run here: ${why}`);
    fx = await openNative();
    assert.ok(fx.opened.gvisor, 'the daemon found no runsc');
    rt = fx.opened.gvisor;
  });
  after(async () => {
    for (const r of made.reverse()) await rt.killSandbox(r).catch(() => undefined);
    await fx?.close();
  });

  it('a server, a background loop and the REPL live on in three children, each its own', async () => {
    const h = await rt.createSandbox({
      id: 'gvf-src',
      name: 'gvf-src',
      group: 'default',
      image: 'debian',
      limits: DEFAULT_LIMITS,
      env: {},
      prewarm: [],
    });
    const src = rec(h.id, h.runtime);
    made.push(src);
    await rt.writeFile(src, '/srv.py', Buffer.from(SERVER));
    await sh(
      src,
      '(python3 /srv.py >/dev/null 2>&1 &); (i=0; while :; do i=$((i+1)); echo $i > /tmp/loop; sleep 0.1; done) >/dev/null 2>&1 &',
    );
    await sh(src, `for i in 1 2 3 4 5 6 7 8 9 10; do ${GET} >/dev/null 2>&1 && break; sleep 0.3; done`);
    assert.equal(await sh(src, GET), '2');
    await rt.replEval(src, 'state = {"cells": 41}', {});

    const out = await rt.forkSandbox(
      src,
      [1, 2, 3].map((i) => ({
        id: `gvf-c${i}`,
        name: `c${i}`,
        env: {},
        limits: DEFAULT_LIMITS,
        forkIndex: i,
      })),
    );
    const kids = out.children.map((c) => {
      assert.ok(c.ok, c.ok ? '' : c.error);
      const r = rec(c.id, c.handle.runtime);
      made.push(r);
      return r;
    });
    assert.equal(kids.length, 3);

    for (const [i, kid] of kids.entries()) {
      assert.equal(await sh(kid, 'echo $FORKBOX_SANDBOX_ID'), kid.id);
      // The server came with the fork: its count goes on from the source's 2, in this child's memory only.
      for (let k = 0; k <= i; k++) assert.equal(await sh(kid, GET), String(3 + k), `${kid.id} request ${k}`);
      const a = Number(await sh(kid, 'cat /tmp/loop'));
      const b = Number(await sh(kid, 'sleep 0.5; cat /tmp/loop'));
      assert.ok(b > a, `the loop runs in ${kid.id}: ${a} → ${b}`);
      const v = await rt.replEval(kid, 'state["cells"] + 1', {});
      assert.equal(v.value, '42');
    }
    // The source was not disturbed: its server counts on from its own 2.
    assert.equal(await sh(src, GET), '3');
    assert.equal((await rt.replEval(src, 'state["cells"]', {})).value, '41');
  });
});
