/**
 * A create whose image is a registry reference not yet in the store shows the pull's progress. MCP
 * `sandbox_create`: the
 * image is pulled on first use, and a client that gave a progressToken gets the pull's phases as
 * `notifications/progress` while it runs (from a quarter second in) (through `forkbox mcp` over stdio, a client of a real daemon:
 * the daemon streams the pull's progress to it as NDJSON). The sandbox is then made from the pulled image;
 * a second create of the same reference pulls nothing, and a reference the registry lacks fails the call.
 * CLI `forkbox create --image REF`: the pull's phases on stderr, the sandbox on stdout. The registry is
 * Debian's docker-registry, filled by the test (test/helpers/registry.ts).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { withBulk } from '../helpers/mcp-result.ts';
import { forkboxMcpServer } from '../helpers/mcp-stdio.ts';
import { defaultImage, makeStateDir, nativeUnavailable } from '../helpers/native.ts';
import {
  LAYER_GZ,
  LAYER_TAR,
  makeLayer,
  pushImage,
  startRegistry,
  type TestRegistry,
  tarLayerDir,
} from '../helpers/registry.ts';
import { registryCli } from '../helpers/registry-suite.ts';

const skip = nativeUnavailable();
const text = (r: CallToolResult): string => (r.content[0]?.type === 'text' ? r.content[0].text : '');

describe('a create pulls its image on first use, showing progress', { skip: skip ?? false }, () => {
  let reg: TestRegistry;
  let work: string;
  let stateDir: string;
  let daemon: Awaited<ReturnType<typeof startServe>> | undefined;
  let client: Client;
  let ref: string;
  const cli = registryCli(() => stateDir);

  before(async () => {
    work = mkdtempSync('/var/tmp/fbx-registry-');
    reg = await startRegistry(join(work, 'registry'));
    const [baseLayer] = defaultImage().layers;
    assert.ok(baseLayer, 'the default image has a layer');
    const base = await reg.pushBlob('test/mcp', tarLayerDir(work, baseLayer), LAYER_TAR);
    const app = await reg.pushBlob(
      'test/mcp',
      makeLayer(work, { 'opt/mcp/hello.txt': 'pulled\n' }),
      LAYER_GZ,
    );
    await pushImage(reg, 'test/mcp', 'v1', [base, app], { Env: ['PATH=/usr/local/bin:/usr/bin:/bin'] });
    // The same layers under another config: another image, whose pull downloads nothing new.
    await pushImage(reg, 'test/mcp', 'cli', [base, app], { Env: ['PATH=/usr/bin:/bin', 'VIA=cli'] });
    ref = `${reg.host}/test/mcp:v1`;
    stateDir = makeStateDir();
    daemon = await startServe(stateDir);
    client = new Client({ name: 'forkbox-create-pull-test', version: '1' });
    await client.connect(
      new StdioClientTransport(forkboxMcpServer(stateDir, { extraArgs: ['--session-grace', '0'] })),
    );
  });

  after(async () => {
    await client?.close().catch(() => undefined);
    await stopServeAndClean(daemon?.child, stateDir);
    await reg?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  async function create(
    seen: string[],
  ): Promise<{ id: string; image: string; progressed: number; result: CallToolResult }> {
    let progressed = 0;
    const result = (await client.callTool(
      { name: 'sandbox_create', arguments: { image: ref } },
      {
        onprogress: (p) => {
          progressed++;
          seen.push(p.message ?? '');
        },
        // A pull of the default image's 1+ GiB layer can outlast the SDK's 60 s default: progress resets it.
        resetTimeoutOnProgress: true,
        timeout: 120_000,
      },
    )) as CallToolResult;
    assert.notEqual(result.isError, true, text(result));
    const sc = result.structuredContent as { id: string; image: string };
    return { id: sc.id, image: sc.image, progressed, result };
  }

  it('sends the pull as progress notifications, then makes the sandbox from the pulled image', async () => {
    const seen: string[] = [];
    const first = await create(seen);
    const pulling = seen.filter((m) => m.includes(`pulling ${ref}: `));
    // States go out from a quarter second into the call, at most one a second; the result is the last.
    console.error(`# ${first.progressed} progress notifications, ${pulling.length} of the pull`);
    assert.ok(pulling.length > 0, JSON.stringify(seen));
    for (const m of pulling)
      assert.match(
        m,
        /: (resolving|(downloading )?layer \d+\/\d+|extracting|shift|.* pulled as ')/,
        JSON.stringify(seen),
      );
    // Recorded under its local name (`<repository>-<tag>-<hash of the reference>`).
    assert.match(first.image, /^mcp-v1-[0-9a-f]{8}$/);
    const r = withBulk(
      (await client.callTool({
        name: 'exec_run',
        arguments: { sandbox: first.id, argv: ['cat', '/opt/mcp/hello.txt'] },
      })) as CallToolResult,
    );
    assert.equal(r.stdout, 'pulled\n', JSON.stringify(r));

    // In the store now: a second create pulls nothing (no pull progress, the same local image).
    const again: string[] = [];
    const second = await create(again);
    assert.equal(second.image, first.image);
    assert.deepEqual(
      again.filter((m) => m.includes('pulling ')),
      [],
    );
  });

  it('a reference the registry lacks fails the call with its error', async () => {
    const missing = `${reg.host}/test/mcp:nope`;
    const seen: string[] = [];
    const r = (await client.callTool(
      { name: 'sandbox_create', arguments: { image: missing } },
      { onprogress: (p) => seen.push(p.message ?? '') },
    )) as CallToolResult;
    assert.equal(r.isError, true, text(r));
    assert.match(text(r), /manifest unknown/);
    // A failure this quick (a few ms) usually comes before any state; one that comes is this pull's.
    for (const m of seen.filter((x) => x.includes('; latest: ')))
      assert.ok(m.includes(`pulling ${missing}: resolving `), JSON.stringify(seen));
  });

  it('forkbox create --image REF shows the pull on stderr and prints the sandbox', async () => {
    const cliRef = `${reg.host}/test/mcp:cli`;
    const r = await cli.run('--json', 'create', '--image', cliRef);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`==> resolving: resolving ${cliRef}`));
    assert.match(r.stderr, /==> done: .* pulled as 'mcp-cli-[0-9a-f]{8}'/);
    const sb = JSON.parse(r.stdout) as { id: string; image: string };
    assert.match(sb.image, /^mcp-cli-[0-9a-f]{8}$/);
    const env = await cli.ok('exec', sb.id, '--', 'printenv', 'VIA');
    assert.equal(env, 'cli\n');
  });
});
