/**
 * agentkernel's documented flow, run unchanged by the kind of client agentkernel's users had (the v1
 * TypeScript SDK over stdio) against `forkbox mcp --toolset agentkernel`, a client of a real daemon with
 * the native runtime: sandbox_run with an image → sandbox_create → sandbox_exec → sandbox_file_write /
 * sandbox_file_read → snapshot_take → snapshot_restore (the restored sandbox has the files) →
 * sandbox_extend_ttl (the expiry grows by the amount); its browser tools on a sandbox of the browser
 * image (open → refs → fill → click → events → close); plus agentkernel's text results, its `Error: …` convention and sandbox_stop/start.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { createDaemonClient, type DaemonClient } from '../../src/transports/daemon-client.ts';
import { refOf, SITE, serveSite } from '../helpers/browser-page.ts';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { forkboxMcpServer } from '../helpers/mcp-stdio.ts';
import { browserUnavailable, makeBrowserStateDir } from '../helpers/native.ts';

const skip = browserUnavailable();

type Json = Record<string, unknown>;
interface Result {
  isError?: boolean;
  content: { type: string; text?: string }[];
}

describe('agentkernel toolset over stdio (v1 SDK, real daemon)', { skip: skip ?? false }, () => {
  let stateDir: string;
  let daemon: ServedDaemon | undefined;
  let client: Client;
  let api: DaemonClient;

  const call = async (name: string, args: Json) =>
    (await client.callTool({ name, arguments: args }, CallToolResultSchema, {
      timeout: 120_000,
    })) as Result;
  /** agentkernel's answer: the one text block. */
  const text = async (name: string, args: Json): Promise<string> => {
    const r = await call(name, args);
    assert.notEqual(r.isError, true, `${name}: ${r.content[0]?.text}`);
    assert.equal(r.content.length, 1, `${name}: one text block`);
    assert.equal(r.content[0]?.type, 'text');
    return r.content[0]?.text ?? '';
  };
  const failure = async (name: string, args: Json): Promise<string> => {
    const r = await call(name, args);
    assert.equal(r.isError, true, `${name} should fail: ${r.content[0]?.text}`);
    const t = r.content[0]?.text ?? '';
    assert.match(t, /^Error: /);
    return t;
  };

  before(async () => {
    stateDir = makeBrowserStateDir();
    daemon = await startServe(stateDir);
    api = createDaemonClient({ socketPath: join(stateDir, 'forkbox.sock') });
    client = new Client({ name: 'agentkernel-user', version: '1' });
    await client.connect(
      new StdioClientTransport(forkboxMcpServer(stateDir, { extraArgs: ['--toolset', 'agentkernel'] })),
    );
  });
  after(async () => {
    await client?.close().catch(() => undefined);
    await stopServeAndClean(daemon?.child, stateDir);
  });

  it('run with an image → create → exec → files → snapshot → restore → extend TTL', async () => {
    const { tools } = await client.listTools();
    assert.equal(tools.length, 21);

    // sandbox_run: an ephemeral sandbox of the image named, removed afterwards.
    const before = (await api.listSandboxes()).length;
    assert.equal(
      await text('sandbox_run', {
        command: ['python3', '-c', 'import os; print(sum(range(100)), os.environ["GREETING"])'],
        image: 'debian',
        env: { GREETING: 'hi' },
      }),
      '4950 hi\n',
    );
    assert.equal((await api.listSandboxes()).length, before, 'the temporary sandbox is gone');
    const failed = await failure('sandbox_run', { command: ['sh', '-c', 'echo oops >&2; exit 3'] });
    assert.equal(failed, 'Error: command exited with code 3:\noops\n');

    assert.equal(
      await text('sandbox_create', { name: 'my-project', image: 'debian' }),
      "Sandbox 'my-project' created and started with image 'debian'",
    );
    assert.match(
      await text('sandbox_list', {}),
      /^NAME\tSTATUS\tBACKEND\tIP\tPORTS\nmy-project\trunning\tforkbox\t-\t\n/,
    );
    assert.equal(
      await text('sandbox_exec', {
        name: 'my-project',
        command: ['sh', '-c', 'echo "$A in $(pwd)"'],
        env: ['A=1'],
        workdir: '/tmp',
      }),
      '1 in /tmp\n',
    );

    assert.equal(
      await text('sandbox_file_write', {
        name: 'my-project',
        path: '/app/script.py',
        content: "print('hello')",
      }),
      "Wrote 14 bytes to '/app/script.py' in sandbox 'my-project'",
    );
    assert.equal(
      await text('sandbox_file_read', { name: 'my-project', path: '/app/script.py' }),
      "print('hello')",
    );
    assert.equal(
      await text('sandbox_exec', { name: 'my-project', command: ['python3', '/app/script.py'] }),
      'hello\n',
    );
    await text('sandbox_exec', {
      name: 'my-project',
      command: ['sh', '-c', 'printf "\\377\\001" > /app/bin'],
    });
    assert.equal(
      await text('sandbox_file_read', { name: 'my-project', path: '/app/bin' }),
      '[binary file, 2 bytes, base64 encoded]\n/wE=',
    );

    const snap = JSON.parse(
      await text('snapshot_take', { sandbox: 'my-project', name: 'checkpoint-1' }),
    ) as Json;
    assert.equal(snap.name, 'checkpoint-1');
    assert.equal(snap.sandbox, 'my-project');
    assert.equal(snap.base_image, 'debian');
    assert.deepEqual(
      (JSON.parse(await text('snapshot_list', {})) as Json[]).map((s) => s.name),
      ['checkpoint-1'],
    );
    assert.equal(
      (JSON.parse(await text('snapshot_get', { name: 'checkpoint-1' })) as Json).sandbox,
      'my-project',
    );
    // The source moves on; the restored sandbox has the files of the moment the snapshot was taken.
    await text('sandbox_file_write', { name: 'my-project', path: '/app/script.py', content: 'changed' });
    assert.equal(
      await text('snapshot_restore', { name: 'checkpoint-1', as_name: 'restored-sandbox' }),
      "Restored snapshot 'checkpoint-1' as sandbox 'restored-sandbox'.",
    );
    assert.equal(
      await text('sandbox_exec', { name: 'restored-sandbox', command: ['python3', '/app/script.py'] }),
      'hello\n',
    );
    assert.equal(
      await text('snapshot_restore', { name: 'checkpoint-1' }),
      "Restored snapshot 'checkpoint-1' as sandbox 'my-project-restored'.",
    );

    // sandbox_extend_ttl ADDS to the current expiry.
    assert.equal(
      await text('sandbox_extend_ttl', { name: 'my-project' }),
      "Sandbox 'my-project' now has no expiry (TTL disabled).",
    );
    const set = await api.extendSandbox('my-project', 600);
    const was = Date.parse(set.expiresAt ?? '');
    const answer = await text('sandbox_extend_ttl', { name: 'my-project', by: '30m' });
    const now = Date.parse((await api.getSandbox('my-project')).expiresAt ?? '');
    assert.equal(answer, `Extended TTL for sandbox 'my-project'. New expiry: ${new Date(now).toISOString()}`);
    const grew = Math.round((now - was) / 1000);
    assert.ok(grew >= 1800 && grew <= 1801, `the expiry grew by ${grew} s, not 1800`);
    assert.match(
      await failure('sandbox_extend_ttl', { name: 'my-project', by: 'soon' }),
      /invalid duration 'soon'/,
    );
  });

  it('the browser flow: open → snapshot refs → fill by ref → click by selector → events → close', async () => {
    assert.match(
      await text('sandbox_create', { name: 'my-browser', image: 'debian-browser' }),
      /^Sandbox 'my-browser' created/,
    );
    await serveSite(api, 'my-browser');
    const opened = JSON.parse(await text('browser_open', { name: 'my-browser', url: `${SITE}/` })) as {
      snapshot: string;
      url: string;
      title: string;
      refs: string[];
    };
    assert.equal(opened.url, `${SITE}/`);
    assert.equal(opened.title, 'Test form');
    const name = refOf(opened.snapshot, /textbox "Name"/);
    assert.ok(opened.refs.includes(name), 'refs lists the snapshot’s refs');
    const filled = JSON.parse(await text('browser_fill', { name: 'my-browser', ref: name, value: 'Ada' }));
    assert.match(filled.snapshot, /textbox "Name"[^\n]*: Ada/);
    const clicked = JSON.parse(await text('browser_click', { name: 'my-browser', selector: '#go' }));
    assert.match(clicked.snapshot, /Hello, Ada \(free\)/);
    assert.match(
      JSON.parse(await text('browser_snapshot', { name: 'my-browser' })).snapshot,
      /button "Sent"/,
    );
    const events = JSON.parse(await text('browser_events', { name: 'my-browser', limit: 1000 })) as {
      events: { type: string; text?: string }[];
    };
    assert.ok(events.events.some((e) => e.type === 'console' && e.text === 'hello from the page'));
    assert.match(
      await failure('browser_snapshot', { name: 'my-browser', page: 'second' }),
      /one page per sandbox/,
    );
    assert.deepEqual(JSON.parse(await text('browser_close', { name: 'my-browser' })), {
      closed: true,
      page: 'default',
    });
    assert.match(await failure('browser_snapshot', { name: 'my-browser' }), /^Error: .*open a page first/);
    assert.match(
      await failure('browser_open', { name: 'my-project', url: `${SITE}/` }),
      /^Error: .*has no Chromium: .*debian-browser/,
    );
  });

  it('stop freezes and start resumes; errors read as agentkernel wrote them', async () => {
    await text('sandbox_create', { name: 'pausable' });
    assert.equal(await text('sandbox_stop', { name: 'pausable' }), "Sandbox 'pausable' stopped.");
    assert.match(await text('sandbox_list', {}), /\npausable\tstopped\tforkbox\t/);
    assert.match(
      await failure('sandbox_exec', { name: 'pausable', command: ['true'] }),
      /Start it first with sandbox_start/,
    );
    assert.equal(await text('sandbox_stop', { name: 'pausable' }), "Sandbox 'pausable' is already stopped.");
    assert.equal(await text('sandbox_start', { name: 'pausable' }), "Sandbox 'pausable' started.");
    assert.equal(await text('sandbox_exec', { name: 'pausable', command: ['echo', 'back'] }), 'back\n');
    assert.equal(await text('sandbox_remove', { name: 'pausable' }), "Sandbox 'pausable' removed.");
    assert.match(
      await failure('sandbox_exec', { name: 'pausable', command: ['true'] }),
      /is killed, not running\. Create a new one with sandbox_create\.$/,
    );
    assert.match(
      await failure('sandbox_create', { name: 'cloned', source_url: 'https://example.org/r.git' }),
      /source_url\/source_ref need network access/,
    );
    assert.match(
      await failure('sandbox_run', { command: ['true'], network: true }),
      /network: true is not available/,
    );
    // Long output is cut to 16,000 bytes around agentkernel's marker.
    const long = await text('sandbox_run', { command: ['python3', '-c', "print('x' * 20000, end='')"] });
    assert.equal(long, `${'x'.repeat(8000)}\n\n... [4000 bytes truncated] ...\n\n${'x'.repeat(8000)}`);
  });
});
