/**
 * The CLI's global --url / --token-file options: `serve --token-file` still reaches serve (commander
 * would give the global option precedence), and `forkbox mcp` refuses remote mode.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Command } from 'commander';
import type { CliContext } from '../../src/cli/context.ts';
import { buildProgram } from '../../src/cli/main.ts';
import { isForkboxError } from '../../src/domain/errors.ts';
import { createTestEngine } from '../helpers/test-engine.ts';

async function program() {
  const ctx: CliContext = {
    globals: () => ({ stateDir: '/nonexistent', json: false }),
    out: () => {
      throw new Error('no output expected');
    },
    api: async () => createTestEngine().api,
    setExitCode: () => undefined,
  };
  const p = await buildProgram(ctx);
  const seen: Record<string, unknown>[] = [];
  const sub = (name: string) => p.commands.find((c) => c.name() === name) as Command;
  // Replace the actions: only the parsed options matter here.
  sub('serve').action((o: Record<string, unknown>) => {
    seen.push({ cmd: 'serve', ...o, global: p.opts().tokenFile });
  });
  sub('ls').action(() => {
    seen.push({ cmd: 'ls', global: p.opts().tokenFile, url: p.opts().url });
  });
  return { p, seen };
}

describe('cli remote options', () => {
  it("serve --token-file is serve's tenants file, not the client token", async () => {
    const { p, seen } = await program();
    await p.parseAsync(['node', 'forkbox', 'serve', '--token-file', '/etc/forkbox/tokens']);
    assert.equal(seen[0]?.tokenFile, '/etc/forkbox/tokens');
    assert.equal(seen[0]?.global, undefined);
  });
  it('--url and --token-file are global for client commands', async () => {
    const { p, seen } = await program();
    await p.parseAsync(['node', 'forkbox', '--url', 'http://h:1', 'ls', '--token-file', '/t']);
    assert.deepEqual(seen[0], { cmd: 'ls', global: '/t', url: 'http://h:1' });
  });
  it('forkbox mcp refuses remote mode with invalid_argument', async () => {
    const { p } = await program();
    await assert.rejects(p.parseAsync(['node', 'forkbox', '--url', 'http://h:1', 'mcp']), (e) => {
      assert.ok(isForkboxError(e));
      assert.equal(e.code, 'invalid_argument');
      assert.match(e.message, /URL\/mcp/);
      return true;
    });
  });
});
