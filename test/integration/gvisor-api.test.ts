/**
 * The gvisor runtime through the API, as a client sees it: a create that names it, its info and
 * capabilities, a fork's report (every process carried), a snapshot restored three times with its
 * running server in each restore, and what it does not support failing with an error that names it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ForkboxError } from '../../src/domain/errors.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { gvisorUnavailable, type NativeFixture, openNative } from '../helpers/native.ts';

// A server that answers with its own request count (each restore's counts from the snapshot's on).
const SERVER = `import http.server
n = [0]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        n[0] += 1
        self.send_response(200); self.end_headers(); self.wfile.write(str(n[0]).encode())
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', 8000), H).serve_forever()
`;
const GET = `python3 -c "import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:8000/').read().decode())"`;

describe('gvisor sandboxes through the API', () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  const sh = async (id: string, cmd: string) => {
    const r = await api.exec(id, { cmd, timeoutSeconds: 30 });
    assert.equal(r.exitCode, 0, r.stderr);
    return r.stdout.trim();
  };

  before(async () => {
    const why = gvisorUnavailable();
    assert.equal(why, null, `the gvisor runtime cannot run here: ${why}`);
    fx = await openNative();
    api = fx.opened.api;
  });
  after(async () => {
    await fx?.close();
  });

  it('a create names it; info says so with its capabilities; a fork reports every process carried', async () => {
    assert.ok((await api.status()).runtimes.includes('gvisor'));
    const sb = await api.createSandbox({ runtime: 'gvisor' });
    assert.equal(sb.runtime, 'gvisor');
    assert.equal(sb.capabilities?.forkProcesses, true);
    assert.equal((await api.getSandbox(sb.id)).runtime, 'gvisor');
    await sh(sb.id, '(sleep 300 &) ; true');
    const f = await api.forkSandbox(sb.id, { n: 1 });
    assert.equal(f.carried.processes, true);
    assert.deepEqual(
      f.notCarried.filter((w) => /processes other than/.test(w)),
      [],
      'a gvisor fork does not say processes stay behind',
    );
    const child = f.children[0]?.sandbox;
    assert.ok(child, JSON.stringify(f.children));
    assert.equal(child.runtime, 'gvisor', 'a fork stays on its source runtime');
    assert.match(await sh(child.id, 'ps -eo args'), /sleep 300/);
    await api.killSandbox(child.id);
    await api.killSandbox(sb.id);
  });

  it('a snapshot restored three times: its server runs in every restore, each counting on its own', async () => {
    const sb = await api.createSandbox({ runtime: 'gvisor' });
    await api.writeFile(sb.id, '/srv.py', Buffer.from(SERVER));
    await sh(sb.id, '(python3 /srv.py >/dev/null 2>&1 &); true');
    await sh(sb.id, `for i in $(seq 20); do ${GET} >/dev/null 2>&1 && break; sleep 0.3; done`);
    assert.equal(await sh(sb.id, GET), '2');
    const snap = await api.createSnapshot(sb.id, { name: 'served' });
    await api.killSandbox(sb.id);
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await api.restoreSnapshot(snap.id, { n: 1 });
      const id = r.children[0]?.sandbox?.id;
      assert.ok(id, JSON.stringify(r.children));
      assert.equal(await sh(id, GET), '3', `restore ${i}: the server came back with its count`);
      assert.equal(await sh(id, GET), '4');
      seen.push(id);
    }
    assert.equal(new Set(seen).size, 3);
    for (const id of seen) await api.killSandbox(id);
  });

  it('what it does not support fails with an error naming the runtime', async () => {
    await assert.rejects(
      api.createSandbox({ runtime: 'gvisor', network: 'allow:10.0.0.1/32' }),
      (e: unknown) => e instanceof ForkboxError && /gvisor/.test(e.message),
    );
    const sb = await api.createSandbox({ runtime: 'gvisor' });
    const other = await api.forkSandbox(sb.id, { n: 1 });
    const kid = other.children[0]?.sandbox?.id;
    assert.ok(kid);
    await assert.rejects(
      api.diffSandboxes(sb.id, kid),
      (e: unknown) => e instanceof ForkboxError && e.code === 'invalid_argument' && /gvisor/.test(e.message),
    );
    await api.killSandbox(kid);
    await api.killSandbox(sb.id);
  });
});
