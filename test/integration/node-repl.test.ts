/**
 * The persistent Node.js REPL (`code_run` with language node/nodejs): state across calls, errors with their
 * stack, top-level await, a runaway cell interrupted with the REPL still answering, code_reset, and what a
 * fork does (the child's Node REPL starts fresh and says so; the parent keeps its state).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi, SandboxInfo } from '../../src/service/api.ts';
import { rejectsWith } from '../helpers/assert-error.ts';
import { type Cli, cliFor } from '../helpers/cli.ts';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { makeStateDir, type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const why = nativeUnavailable();

describe('node REPL', { skip: why ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id: string;
  const node = (code: string, timeoutSeconds?: number) =>
    api.runCode(id, { language: 'node', code, ...(timeoutSeconds ? { timeoutSeconds } : {}) });

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    id = (await api.createSandbox({ name: 'node-repl' })).id;
  });
  after(async () => {
    await fx?.close();
  });

  it('keeps variables, functions and requires between calls', async () => {
    const first = await node('let count = 41; const os = require("os"); function inc() { return ++count }');
    assert.equal(first.ok, true, first.error?.traceback);
    assert.equal(first.value, null);
    const r = await node('console.log("count is", count); console.error("to stderr"); inc()');
    assert.equal(r.ok, true, r.error?.traceback);
    assert.equal(r.value, '42');
    assert.equal(r.stdout, 'count is 41\n');
    assert.equal(r.stderr, 'to stderr\n');
    assert.equal(r.restarted, false);
    const alias = await api.runCode(id, { language: 'nodejs', code: '({ count, platform: os.platform() })' });
    assert.equal(alias.value, "{ count: 42, platform: 'linux' }");
  });

  it('reports an error with its stack and keeps the state', async () => {
    const r = await node('function boom() { throw new TypeError("bad input") }\nboom()');
    assert.equal(r.ok, false);
    assert.equal(r.error?.type, 'TypeError');
    assert.equal(r.error?.message, 'bad input');
    assert.match(r.error?.traceback ?? '', /TypeError: bad input\n\s+at boom \(cell-\d+:1:\d+\)/);
    assert.doesNotMatch(r.error?.traceback ?? '', /replnode|node:repl/);
    assert.equal((await node('count')).value, '42');
  });

  it('awaits at top level and keeps what the awaiting cell declared', async () => {
    const r = await node(
      'const later = await new Promise((r) => setTimeout(() => r(count * 2), 20)); later + 1',
    );
    assert.equal(r.ok, true, r.error?.traceback);
    assert.equal(r.value, '85');
    assert.equal((await node('later')).value, '84');
  });

  it('prints an error thrown later by an earlier cell’s timer without ending the cell that awaits', async () => {
    assert.equal((await node('setTimeout(() => { throw new Error("from a timer") }, 20); "armed"')).ok, true);
    const r = await node('await new Promise((r) => setTimeout(r, 200)); "waited"');
    assert.equal(r.ok, true, r.error?.traceback);
    assert.equal(r.value, "'waited'");
    assert.match(r.stderr, /Uncaught Error: from a timer\n\s+at Timeout\._onTimeout \(cell-\d+:1:\d+\)/);
    assert.equal((await node('count')).value, '42');
  });

  it('interrupts a runaway cell at its timeout and answers again with its state', async () => {
    const r = await node('while (true) {}', 1);
    assert.equal(r.ok, false);
    assert.equal(r.timedOut, true);
    assert.equal(r.interrupted, true);
    assert.equal(r.restarted, false);
    const again = await node('count');
    assert.equal(again.value, '42');
    // A cell awaiting for ever is interrupted too.
    const awaiting = await node('await new Promise(() => {})', 1);
    assert.equal(awaiting.timedOut, true);
    assert.equal(awaiting.restarted, false);
    assert.equal((await node('count')).value, '42');
  });

  it('restarts a cell that ignores the interrupt, and says the state is gone', async () => {
    // A busy loop after an await: no watchdog is armed, only a kill stops it.
    const r = await node('await null; while (true) {}', 1);
    assert.equal(r.ok, false);
    assert.equal(r.restarted, true);
    assert.equal(r.error?.type, 'WorkerRestarted');
    const after = await node('typeof count');
    assert.equal(after.value, "'undefined'");
    assert.equal((await node('let count = 42; count')).value, '42');
  });

  it('a cell that ends the process gets a restarted answer, and the next call a fresh REPL', async () => {
    const r = await node('console.log("bye"); process.exit(3)');
    assert.equal(r.ok, false);
    assert.equal(r.restarted, true);
    assert.equal(r.stdout, 'bye\n');
    assert.equal(r.error?.type, 'WorkerRestarted');
    const next = await node('typeof count');
    assert.equal(next.value, "'undefined'");
    assert.equal(next.restarted, false);
    await node('let count = 42');
  });

  it('code_reset clears the Node REPL', async () => {
    await node('globalThis.marker = "set"');
    await api.resetCode(id);
    const r = await node('typeof marker');
    assert.equal(r.value, "'undefined'");
    assert.equal(r.restarted, false);
    await node('let count = 42');
  });

  it('a fork child starts a fresh Node REPL and says so; the parent keeps its state', async () => {
    await node('var fromParent = "kept"');
    const f = await api.forkSandbox(id, { n: 1 });
    const childId = f.children[0]?.sandbox?.id ?? '';
    assert.ok(f.children[0]?.ok && childId, JSON.stringify(f.children));
    const c1 = await api.runCode(childId, { language: 'node', code: 'typeof fromParent' });
    assert.equal(c1.ok, true);
    assert.equal(c1.value, "'undefined'");
    assert.equal(c1.restarted, true);
    const c2 = await api.runCode(childId, { language: 'node', code: '1 + 1' });
    assert.equal(c2.restarted, false);
    assert.equal(c2.value, '2');
    const p = await node('fromParent');
    assert.equal(p.value, "'kept'");
    assert.equal(p.restarted, false);
  });

  it('says so when the sandbox has no Node.js', async () => {
    // No `node` on the sandbox's PATH stands for an image without Node.js.
    const bare = (await api.createSandbox({ name: 'no-node', env: { PATH: '/nonexistent' } })).id;
    await rejectsWith(
      api.runCode(bare, { language: 'node', code: '1' }),
      'requirement_missing',
      /no Node\.js/,
    );
    assert.equal((await api.runCode(bare, { code: '6 * 7' })).value, '42');
  });
});

describe('node REPL through the CLI and the daemon (REST)', { skip: why ?? false }, () => {
  let stateDir: string;
  let daemon: ServedDaemon | undefined;
  let cli: Cli;

  before(async () => {
    stateDir = makeStateDir();
    daemon = await startServe(stateDir);
    cli = cliFor(stateDir);
  });
  after(async () => {
    await stopServeAndClean(daemon?.child, stateDir);
  });

  it('forkbox eval --language node keeps state; nodejs is the same REPL; a bad language is refused', () => {
    const { id } = cli.json<SandboxInfo>('create');
    assert.equal(cli.ok('eval', '--language', 'node', id, 'let n = 20; console.log("set")'), 'set\n');
    assert.equal(cli.ok('eval', '--language', 'nodejs', id, 'n + 1'), '21\n');
    const r = cli.run(['eval', '--language', 'node', id, 'null.x']);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /TypeError: Cannot read properties of null/);
    assert.match(
      cli.fails(2, 'eval', '--language', 'ruby', id, '1'),
      /not a REPL language: give python or node/,
    );
  });
});
