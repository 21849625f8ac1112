/**
 * Attack: exhaust the daemon through the 2024-11-05 HTTP+SSE MCP transport — open event streams and
 * never use them, queue requests on one session without end, and POST an oversized message. Precedent:
 * the Slowloris class of denial of service (held-open connections exhausting a server; CWE-770,
 * allocation of resources without limits), which a long-lived SSE stream per session invites, and
 * MCP servers whose SSE transport kept every session in memory for as long as a client liked.
 *
 * Contained when: SSE sessions count against the per-tenant live-session limit (the next open is a 429
 * with Retry-After, and a session whose stream closed frees its slot at once); a session with no message
 * for the idle time is closed by the daemon (its stream ends); at most MCP_SSE.pendingRequests requests
 * of one session wait at once (the next POST is a 429); a message over the MCP body bound is a 413.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MCP_SSE } from '../../src/domain/limits.ts';
import { MCP_BODY_LIMIT } from '../../src/protocol/http/app.ts';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

const skip = nativeUnavailable();

interface Stream {
  endpoint: string;
  /** Resolves when the daemon ends the stream. */
  ended: Promise<void>;
  close(): Promise<void>;
}

describe('abuse: HTTP+SSE session flood', { skip: skip ?? false }, () => {
  let stateDir: string;
  let daemon: ServedDaemon | undefined;

  const open = async (): Promise<Stream | Response> => {
    const res = await fetch(`${daemon?.url}/sse`);
    if (res.status !== 200) return res;
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let head = '';
    while (!head.includes('\n\n')) {
      const { value, done } = await reader.read();
      if (done) break;
      head += new TextDecoder().decode(value);
    }
    const endpoint = /data: (\S+)/.exec(head)?.[1] ?? '';
    const ended = (async () => {
      for (;;) if ((await reader.read()).done) return;
    })();
    return { endpoint, ended, close: () => reader.cancel() };
  };
  /** Open once a slot is free (the daemon sees a closed stream when its connection ends). */
  const openWhenFree = () =>
    waitFor(
      async () => {
        const s = await open();
        return s instanceof Response ? undefined : s;
      },
      { what: 'a session slot is free' },
    );
  const post = (endpoint: string, body: string) =>
    fetch(`${daemon?.url}${endpoint}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
  const sleepCall = (id: number) =>
    JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'exec_run', arguments: { command: 'sleep 60' } },
    });

  before(async () => {
    stateDir = makeStateDir();
    daemon = await startServe(stateDir, ['--mcp-max-sessions', '2', '--mcp-session-idle', '3s']);
  });
  after(async () => {
    await stopServeAndClean(daemon?.child, stateDir);
  });

  it('live SSE sessions per tenant are bounded; a closed stream frees its slot', async () => {
    const a = await open();
    const b = await open();
    assert.ok(!(a instanceof Response) && !(b instanceof Response));
    const third = await open();
    assert.ok(third instanceof Response);
    assert.equal(third.status, 429);
    assert.ok(Number(third.headers.get('retry-after')) >= 1);
    assert.match(await third.text(), /too many live MCP sessions/);
    await a.close();
    const again = await openWhenFree();
    await again.close();
    await b.close();
  });

  it('an idle session is closed by the daemon; an oversized message is a 413', async () => {
    const s = await openWhenFree();
    const big = await post(
      s.endpoint,
      JSON.stringify({ jsonrpc: '2.0', method: 'x'.repeat(MCP_BODY_LIMIT) }),
    );
    assert.equal(big.status, 413);
    // No message for the idle time (3 s here): the daemon ends the stream.
    await s.ended;
    assert.equal((await post(s.endpoint, '{"jsonrpc":"2.0","id":1,"method":"ping"}')).status, 404);
  });

  it(`at most ${MCP_SSE.pendingRequests} requests of a session wait at once`, async () => {
    const s = await openWhenFree();
    for (let i = 1; i <= MCP_SSE.pendingRequests; i++) {
      assert.equal((await post(s.endpoint, sleepCall(i))).status, 202, `request ${i}`);
    }
    const over = await post(s.endpoint, sleepCall(99));
    assert.equal(over.status, 429);
    assert.match(await over.text(), /requests waiting for their answers/);
    // Notifications wait for no answer: not bounded by it.
    const note = await post(s.endpoint, '{"jsonrpc":"2.0","method":"notifications/initialized"}');
    assert.equal(note.status, 202);
    const get = async <T>(path: string) => (await (await fetch(`${daemon?.url}${path}`)).json()) as T;
    const running = async () => {
      let n = 0;
      for (const sb of await get<{ id: string }[]>('/v1/sandboxes'))
        for (const e of await get<{ state: string }[]>(`/v1/sandboxes/${sb.id}/execs`))
          if (e.state === 'running') n++;
      return n;
    };
    await waitFor(async () => (await running()) > 0, { what: 'the queued calls run', timeoutMs: 60_000 });
    await s.close();
    // Closing the stream ended the session: its calls are cancelled (their commands end) …
    await waitFor(async () => (await running()) === 0, {
      what: "the closed session's commands are cancelled",
      timeoutMs: 60_000,
    });
    // … and the daemon serves the next session.
    const next = await openWhenFree();
    assert.equal((await post(next.endpoint, '{"jsonrpc":"2.0","id":1,"method":"ping"}')).status, 202);
    await next.close();
  });
});
