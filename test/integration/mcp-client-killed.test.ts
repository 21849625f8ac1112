/**
 * A killed MCP client leaves no process behind in the sandbox (issue #12, cancellation): an `exec_run` of
 * a command with a child that left its session (`setsid sleep 1000 &`) runs in the client's default
 * sandbox when
 *  - the stdio server (`forkbox mcp`, driven by the v1 SDK's StdioClientTransport) is SIGKILLed: no
 *    close, no `notifications/cancelled`, just its connection to the daemon gone;
 *  - an HTTP client's connection (a 2025-11-25 session) is dropped in the middle of the call.
 * Either way the daemon must stop the call's command, its whole process tree, while the sandbox itself
 * lives on (the session's grace keeps it, docs/MCP-CLIENTS.md).
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { SandboxInfo } from '../../src/service/api.ts';
import { sandboxProcesses, waitFor } from '../helpers/cli.ts';
import { forkboxMcpServer } from '../helpers/mcp-stdio.ts';
import { nativeUnavailable } from '../helpers/native.ts';
import { servedSuite } from '../helpers/served-suite.ts';

const skip = nativeUnavailable();
const TREE = 'setsid sleep 1000 & sleep 1000';
const sleeps = (procs: string[]) => procs.filter((l) => l.endsWith(' sleep'));

describe('a killed MCP client leaves no process behind', { skip: skip ?? false }, () => {
  const served = servedSuite();
  const { cli } = served;

  /** The default sandboxes of MCP clients now (by their label). */
  const defaults = () =>
    cli
      .json<SandboxInfo[]>('ls')
      .filter((s) => s.labels['forkbox.mcp-default'] !== undefined)
      .map((s) => s.id);

  /** Wait until the command's two sleeps run in a default sandbox that did not exist before; its id. */
  async function sleepsStarted(before: string[]): Promise<string> {
    return waitFor(() => {
      const id = defaults().find((x) => !before.includes(x));
      return id !== undefined && sleeps(sandboxProcesses(cli, id)).length === 2 ? id : undefined;
    }, 'the command and its setsid child run in the new default sandbox');
  }

  async function nothingLeft(id: string): Promise<void> {
    let procs: string[] = [];
    await waitFor(
      () => {
        procs = sandboxProcesses(cli, id);
        return sleeps(procs).length === 0 ? true : undefined;
      },
      () => `no process of the command left in ${id} (still there: ${procs.join(', ')})`,
    );
    assert.equal(cli.json<SandboxInfo>('inspect', id).state, 'running', 'the sandbox lives on');
  }

  it('stdio: SIGKILL of `forkbox mcp` mid-call ends the command and its setsid child', async () => {
    const transport = new StdioClientTransport(
      forkboxMcpServer(served.stateDir, { env: { FORKBOX_URL: '' } }),
    );
    const client = new Client({ name: 'killed-stdio', version: '1' });
    await client.connect(transport);
    const before = defaults();
    const call = client
      .callTool({ name: 'exec_run', arguments: { command: TREE } }, undefined, { timeout: 600_000 })
      .then(
        () => 'answered',
        () => 'failed',
      );
    const id = await sleepsStarted(before);
    const pid = transport.pid;
    assert.ok(pid, 'the stdio server has a pid');
    process.kill(pid, 'SIGKILL');
    assert.equal(await call, 'failed', 'the call never got an answer: its server was killed');
    await nothingLeft(id);
    await client.close().catch(() => undefined);
  });

  it('HTTP: a connection dropped mid-call ends the command and its setsid child', async () => {
    const url = new URL(served.mcpUrl);
    const post = (body: unknown, session?: string) =>
      request(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
          ...(session ? { 'mcp-session-id': session } : {}),
        },
      }).end(JSON.stringify(body));
    const answer = (body: unknown, session?: string) =>
      new Promise<{ session: string | undefined; text: string }>((resolve, reject) => {
        const req = post(body, session);
        req.on('error', reject);
        req.on('response', (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => {
            text += d;
          });
          res.on('end', () => {
            const id = res.headers['mcp-session-id'];
            resolve({ session: typeof id === 'string' ? id : undefined, text });
          });
        });
      });

    const init = await answer({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'dropped', version: '1' },
      },
    });
    assert.ok(init.session, `a session id (${init.text.slice(0, 300)})`);
    await answer({ jsonrpc: '2.0', method: 'notifications/initialized' }, init.session);
    const before = defaults();
    const req = post(
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'exec_run', arguments: { command: TREE } },
      },
      init.session,
    );
    const ended = new Promise<void>((resolve) => req.on('close', () => resolve()));
    req.on('error', () => undefined); // the drop below
    const id = await sleepsStarted(before);
    req.destroy(); // the client goes away: its TCP connection closes, no cancel is sent
    await ended;
    await nothingLeft(id);
  });
});
