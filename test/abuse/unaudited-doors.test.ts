/**
 * Attack (an insider, or a compromised local client): act on sandboxes through a door that leaves no
 * trail — the local Unix socket (the CLI) or stdio MCP (`forkbox mcp`, a client of that socket) — while
 * only the HTTP listener writes `audit.log`. Precedent: issue #11 item 14; the class is CWE-778
 * (insufficient logging), and the converse, CWE-532 (secrets in logs): an audit trail that records
 * command environments or file contents leaks the credentials passed through it.
 *
 * Contained when: calls through the CLI, stdio MCP (the official v1 SDK client) and HTTP (REST and MCP)
 * each leave a line naming the door, the caller — on the socket the peer's uid and pid as the kernel
 * saw them (SO_PEERCRED), beside the client's own name for itself; on HTTP the token's tenant — the
 * route or tool, the sandbox and the outcome; and a secret passed in a command's environment or a
 * file's content appears nowhere in the log.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { AuditLine } from '../../src/protocol/audit.ts';
import { type AbuseDaemon, startDaemon } from '../helpers/abuse.ts';
import { cliFor } from '../helpers/cli.ts';
import { forkboxMcpServer } from '../helpers/mcp-stdio.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

const why = nativeUnavailable();
const SECRET = 'sk-live-AUDIT-CANARY-7f3a9c';
const TOKEN = 'tok-alice-0123456789abcdef';

describe('abuse: calls through a door that leaves no audit trail', () => {
  let d: AbuseDaemon;
  let stateDir: string;
  const logText = () => {
    try {
      return readFileSync(join(stateDir, 'audit.log'), 'utf8');
    } catch {
      return '';
    }
  };
  const lines = (): AuditLine[] =>
    logText()
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as AuditLine);
  /** Wait for a line matching `pred` (a streamed response's line is written when its body ends). */
  const lineWhere = (what: string, pred: (l: AuditLine) => boolean) =>
    waitFor(() => lines().find(pred), { what: `an audit line for ${what}`, timeoutMs: 15_000 });

  before(async () => {
    if (why) throw new Error(`this abuse test needs the native runtime: ${why}`);
    stateDir = makeStateDir();
    const tokenFile = join(stateDir, 'tokens');
    writeFileSync(tokenFile, `${TOKEN} alice\n`, { mode: 0o600 });
    d = await startDaemon({ stateDir, args: ['--token-file', tokenFile] });
  });
  after(async () => {
    await d?.stop();
  });

  it('the CLI (the socket): the peer uid/pid from SO_PEERCRED, the client named, the outcome', async () => {
    const cli = cliFor(stateDir);
    const created = cli.run(['--json', 'create']);
    assert.equal(created.status, 0, created.stderr);
    const id = (JSON.parse(created.stdout) as { id: string }).id;
    const ran = cli.run(['exec', '--env', `TOKEN=${SECRET}`, id, '--', 'sh', '-c', 'test -n "$TOKEN"']);
    assert.equal(ran.status, 0, ran.stderr);
    const hostFile = join(stateDir, 'secret.txt');
    writeFileSync(hostFile, SECRET);
    const cp = cli.run(['cp', hostFile, `${id}:/tmp/secret.txt`]);
    assert.equal(cp.status, 0, cp.stderr);
    const missing = cli.run(['exec', 'no-such-box', '--', 'true']);
    assert.notEqual(missing.status, 0);

    const exec = await lineWhere('the CLI exec', (l) => l.pid === ran.pid && l.route.endsWith('/exec'));
    assert.equal(exec.door, 'socket');
    assert.equal(exec.client, 'cli');
    assert.equal(exec.uid, process.getuid?.());
    assert.equal(exec.tenant, 'default');
    assert.equal(exec.route, 'POST /v1/sandboxes/:id/exec');
    assert.equal(exec.sandbox, id);
    assert.equal(exec.outcome, 'ok');
    assert.equal(typeof exec.duration_ms, 'number');
    const create = await lineWhere('the CLI create', (l) => l.pid === created.pid);
    assert.equal(create.route, 'POST /v1/sandboxes');
    await lineWhere('the CLI cp', (l) => l.pid === cp.pid && l.route.includes('/files/content'));
    const refused = await lineWhere(
      'the failed CLI exec',
      (l) => l.pid === missing.pid && l.outcome !== 'ok',
    );
    assert.equal(refused.outcome, 'not_found');
    assert.equal(refused.sandbox, 'no-such-box');
    assert.equal(refused.door, 'socket');
  });

  it('stdio MCP (forkbox mcp, v1 SDK): arrives at the socket, recorded as its process and client', async () => {
    const transport = new StdioClientTransport(forkboxMcpServer(stateDir));
    const client = new Client({ name: 'audit-probe', version: '1' });
    await client.connect(transport);
    const pid = transport.pid;
    assert.ok(pid !== null && pid > 0);
    try {
      const ran = await client.callTool(
        { name: 'exec_run', arguments: { argv: ['sh', '-c', 'test -n "$TOKEN"'], env: [`TOKEN=${SECRET}`] } },
        CallToolResultSchema,
      );
      assert.notEqual(ran.isError, true, JSON.stringify(ran.content).slice(0, 500));
      const wrote = await client.callTool(
        { name: 'file_write', arguments: { path: '/tmp/secret.txt', content: SECRET } },
        CallToolResultSchema,
      );
      assert.notEqual(wrote.isError, true, JSON.stringify(wrote.content).slice(0, 500));
      const gone = await client.callTool(
        { name: 'exec_run', arguments: { sandbox: 'no-such-box', argv: ['true'] } },
        CallToolResultSchema,
      );
      assert.equal(gone.isError, true);
    } finally {
      await client.close();
    }
    const exec = await lineWhere('the stdio MCP exec', (l) => l.pid === pid && l.route.endsWith('/exec'));
    assert.equal(exec.door, 'socket');
    assert.equal(exec.client, 'mcp-stdio');
    assert.equal(exec.uid, process.getuid?.());
    assert.equal(exec.outcome, 'ok');
    assert.match(exec.sandbox ?? '', /^[A-Za-z0-9]/);
    await lineWhere('the stdio MCP file write', (l) => l.pid === pid && l.route.includes('/files/content'));
    const refused = await lineWhere(
      'the stdio MCP call on a missing sandbox',
      (l) => l.pid === pid && l.sandbox === 'no-such-box',
    );
    assert.equal(refused.outcome, 'not_found');
    // Its client session (held open while it runs) is audited when it ends, as the same caller.
    const session = await lineWhere(
      'the stdio MCP session',
      (l) => l.pid === pid && l.route.includes('/sessions/'),
    );
    assert.equal(session.client, 'mcp-stdio');
    assert.equal(session.uid, process.getuid?.());
  });

  it('HTTP (REST and MCP): the token’s tenant, the route or tool, the outcome', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const rest = async (method: string, path: string, body?: unknown, raw?: string) => {
      const r = await fetch(`${d.url}${path}`, {
        method,
        headers: {
          ...auth,
          ...(raw === undefined ? { 'content-type': 'application/json' } : {}),
          ...(raw !== undefined ? { 'content-type': 'application/octet-stream' } : {}),
        },
        ...(raw !== undefined ? { body: raw } : body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: r.status, json: (await r.json()) as Record<string, unknown> };
    };
    const created = await rest('POST', '/v1/sandboxes', {});
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const id = created.json.id as string;
    const ran = await rest('POST', `/v1/sandboxes/${id}/exec`, {
      argv: ['sh', '-c', 'test -n "$TOKEN"'],
      env: { TOKEN: SECRET },
    });
    assert.equal(ran.status, 200, JSON.stringify(ran.json));
    const put = await rest(
      'PUT',
      `/v1/sandboxes/${id}/files/content?path=/tmp/secret.txt`,
      undefined,
      SECRET,
    );
    assert.equal(put.status, 200, JSON.stringify(put.json));
    assert.equal((await rest('GET', '/v1/sandboxes/no-such-box')).status, 404);

    const client = new Client({ name: 'audit-probe-http', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${d.url}/mcp`), { requestInit: { headers: auth } }),
    );
    try {
      const r = await client.callTool(
        { name: 'exec_run', arguments: { sandbox: id, argv: ['true'], env: [`TOKEN=${SECRET}`] } },
        CallToolResultSchema,
      );
      assert.notEqual(r.isError, true, JSON.stringify(r.content).slice(0, 500));
    } finally {
      await client.close();
    }

    const exec = await lineWhere('the REST exec', (l) => l.door === 'http' && l.route.endsWith('/exec'));
    assert.equal(exec.tenant, 'alice');
    assert.equal(exec.sandbox, id);
    assert.equal(exec.outcome, 'ok');
    assert.equal(exec.uid, undefined, 'no local uid is claimed for a TCP caller');
    const refused = await lineWhere('the REST 404', (l) => l.door === 'http' && l.sandbox === 'no-such-box');
    assert.equal(refused.outcome, 'not_found');
    assert.equal(refused.tenant, 'alice');
    const tool = await lineWhere('the MCP tool call', (l) => l.door === 'http' && l.tool === 'exec_run');
    assert.equal(tool.tenant, 'alice');
    assert.equal(tool.sandbox, id);
    assert.equal(tool.outcome, 'ok');
  });

  it('never writes a secret from an environment, a file, a token or a command line', () => {
    const text = logText();
    assert.ok(text.length > 0);
    for (const s of [SECRET, TOKEN, 'test -n']) assert.ok(!text.includes(s), `${s} is in the audit log`);
  });
});
