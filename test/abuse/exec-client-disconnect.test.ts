/**
 * Attack (a careless client, not a hostile one): the client of a synchronous exec goes away — it crashes,
 * its user presses Ctrl-C, its connection drops — and the command it started keeps running in the sandbox
 * with nobody to see or stop it. Precedent: issue #12 item 2 (a client that disconnects, or a CLI user
 * pressing Ctrl-C, left its command running), as with `ssh host cmd` whose remote command outlives a
 * dropped connection.
 * Contained when the REST request's abort cancels the exec's whole process tree, and an AbortSignal given
 * to the API client does the same while still returning the (cancelled) result.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createDaemonClient, type DaemonClient } from '../../src/transports/daemon-client.ts';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { processesIn, until } from '../helpers/exec-probe.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';

const skip = nativeUnavailable();

describe('abuse: a client that goes away during a synchronous exec', { skip: skip ?? false }, () => {
  let stateDir = '';
  let daemon: ServedDaemon | undefined;
  let api: DaemonClient;
  let id = '';

  before(async () => {
    stateDir = makeStateDir();
    daemon = await startServe(stateDir);
    api = createDaemonClient({ url: daemon.url });
    id = (await api.createSandbox({})).id;
  });
  after(async () => {
    api?.close();
    await stopServeAndClean(daemon?.child, stateDir);
  });

  it('a dropped REST connection cancels the command and everything it started', async () => {
    const url = new URL(`/v1/sandboxes/${id}/exec`, daemon?.url);
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json' } });
    req.on('error', () => undefined);
    req.end(JSON.stringify({ cmd: 'setsid sleep 941 & sleep 942' }));
    await until('the command to run', async () => (await processesIn(api, id, 'sleep 94')).length === 2);
    req.destroy();
    await until(
      'the command to be gone',
      async () => (await processesIn(api, id, 'sleep 94')).length === 0,
      15_000,
    );
    await until('the exec to be recorded cancelled', async () =>
      (await api.listExecs(id)).some(
        (e) => e.command.join(' ').includes('sleep 942') && e.state === 'cancelled',
      ),
    );
  });

  it('an aborted API call cancels the tree and still returns the result', async () => {
    const ac = new AbortController();
    const running = api.exec(id, { cmd: 'setsid sleep 951 & sleep 952' }, { signal: ac.signal });
    await until('the command to run', async () => (await processesIn(api, id, 'sleep 95')).length === 2);
    ac.abort();
    const o = await running;
    assert.equal(o.cancelled, true, JSON.stringify(o));
    assert.deepEqual(await processesIn(api, id, 'sleep 95'), []);
  });
});
