/**
 * The exec side of the agent protocol, with the real agent on the host: the output contract (head, tail,
 * spool file, peeks, mode "latest" with its rate and gaps), the spawner (replaced when it dies; a request
 * naming a dead one is refused as stale), and results kept for a host that reconnects (exec.results).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ForkboxError } from '../../src/domain/errors.ts';
import {
  type AgentConnection,
  type AgentEvent,
  createAgentConnection,
  readHello,
} from '../../src/runtimes/native/agent-link/agent-connection.ts';

const AGENT = fileURLToPath(new URL('../../src/agent/agent.py', import.meta.url));
const PYTHON = process.env.FORKBOX_TEST_PYTHON ?? 'python3';
const hasPython = spawnSync(PYTHON, ['--version']).status === 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

import { agentBoundsEnv } from '../../src/domain/limits.ts';
import { waitFor } from '../helpers/wait-for.ts';

async function until<T>(
  what: string,
  f: () => Promise<T | undefined> | T | undefined,
  ms = 20_000,
): Promise<T> {
  const boxed = await waitFor(
    async () => {
      const v = await f();
      return v === undefined ? undefined : { v };
    },
    { what, timeoutMs: ms, intervalMs: 50 },
  );
  return boxed.v;
}

function run(conn: AgentConnection, args: Record<string, unknown>) {
  const events: AgentEvent[] = [];
  const s = conn.stream('exec', args, { onEvent: (e) => events.push(e) });
  const done = s.done.then((r) => ({ result: r.result, events }));
  return { id: s.id, done, events };
}

const bytesOf = (events: AgentEvent[], kind: string) =>
  Buffer.concat(events.filter((e) => e.kind === kind).map((e) => e.body));

describe('agent exec output and spawner (real agent on the host)', {
  skip: hasPython ? false : 'python3 is not installed',
}, () => {
  let dir = '';
  let spool = '';
  let server: net.Server;
  const sockets: net.Socket[] = [];
  const waiting: ((s: net.Socket) => void)[] = [];
  let agent: ChildProcess;
  let conn: AgentConnection;

  const nextSocket = () =>
    new Promise<net.Socket>((resolve) => {
      const s = sockets.shift();
      if (s) resolve(s);
      else waiting.push(resolve);
    });
  async function accept(): Promise<AgentConnection> {
    const s = await nextSocket();
    return createAgentConnection(s, await readHello(s, 5000));
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'forkbox-agent-exec-'));
    spool = join(dir, 'spool');
    const sockPath = join(dir, 'ctl.sock');
    server = net.createServer((s) => {
      const w = waiting.shift();
      if (w) w(s);
      else sockets.push(s);
    });
    await new Promise<void>((r) => server.listen(sockPath, r));
    agent = spawn(PYTHON, [AGENT], {
      env: {
        ...process.env,
        FORKBOX_CTL_SOCKET: sockPath,
        FORKBOX_ROLE: 'sandbox',
        FORKBOX_SANDBOX_ID: 'exec1',
        FORKBOX_BOUNDS: agentBoundsEnv(),
        FORKBOX_OUTPUT_DIR: spool,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    conn = await accept();
  });

  after(async () => {
    conn?.close();
    if (agent?.exitCode === null) {
      const exited = new Promise((r) => agent.once('exit', r));
      agent.kill('SIGTERM');
      await Promise.race([exited, sleep(5000)]);
      if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGKILL');
    }
    await new Promise<void>((r) => server.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('spools the whole stream to a file and forwards head and tail with their offsets', async () => {
    const r = await run(conn, {
      cmd: 'seq 1 400000',
      max_output_bytes: 64 * 1024,
      output_id: 'ex-spool',
      spool_bytes: 64 << 20,
    }).done;
    const expected = spawnSync('seq', ['1', '400000'], { maxBuffer: 64 << 20 }).stdout;
    assert.equal(r.result.stdout_total, expected.length);
    assert.equal(r.result.stdout_file, join(spool, 'ex-spool.stdout'));
    assert.equal(r.result.stdout_spooled, expected.length);
    assert.deepEqual(readFileSync(join(spool, 'ex-spool.stdout')), expected);
    const head = bytesOf(r.events, 'stdout');
    assert.deepEqual(head, expected.subarray(0, 48 * 1024));
    assert.equal(r.events.find((e) => e.kind === 'stdout')?.offset, 0);
    const tailEv = r.events.find((e) => e.kind === 'stdout_tail');
    assert.ok(tailEv);
    assert.equal(tailEv.offset, expected.length - 16 * 1024);
    assert.deepEqual(tailEv.body, expected.subarray(expected.length - 16 * 1024));
    assert.equal(r.result.truncated, true);
    assert.equal(r.result.stderr_file, null, 'nothing left out of stderr: no file');
  });

  it('stops spooling at spool_bytes and makes no file for output that fits inline', async () => {
    const capped = await run(conn, {
      cmd: 'head -c 3000000 /dev/zero',
      max_output_bytes: 1000,
      output_id: 'ex-capped',
      spool_bytes: 100_000,
    }).done;
    assert.equal(capped.result.stdout_total, 3_000_000);
    assert.equal(capped.result.stdout_spooled, 100_000);
    assert.equal(readFileSync(join(spool, 'ex-capped.stdout')).length, 100_000);
    const small = await run(conn, {
      cmd: 'echo small',
      max_output_bytes: 1000,
      output_id: 'ex-small',
      spool_bytes: 100_000,
    }).done;
    assert.equal(small.result.stdout_file, null);
    assert.equal(existsSync(join(spool, 'ex-small.stdout')), false);
    // Between the lazy in-memory part (64 KiB) and the budget: the file is made, then removed.
    const medium = await run(conn, {
      cmd: 'head -c 100000 /dev/zero',
      max_output_bytes: 200_000,
      output_id: 'ex-medium',
      spool_bytes: 1 << 20,
    }).done;
    assert.equal(bytesOf(medium.events, 'stdout').length, 100_000);
    assert.equal(medium.result.stdout_file, null);
    assert.equal(existsSync(join(spool, 'ex-medium.stdout')), false);
  });

  it('keeps what a small stream left out of head and tail in its spool file, even over a planted FIFO', async () => {
    // Under the lazy in-memory part (64 KiB) but over the budget: the omitted middle must still be kept.
    // Code in the sandbox can plant a FIFO at the spool file's name: opening it must neither block nor
    // write into it.
    mkdirSync(spool, { recursive: true, mode: 0o700 });
    assert.equal(spawnSync('mkfifo', [join(spool, 'ex-small-cut.stdout')]).status, 0);
    const r = await run(conn, {
      cmd: "printf 'z%.0s' $(seq 1 4999); printf 'E\\n'",
      max_output_bytes: 100,
      output_id: 'ex-small-cut',
      spool_bytes: 1 << 20,
    }).done;
    assert.equal(r.result.stdout_total, 5001);
    assert.equal(r.result.truncated, true);
    assert.equal(r.result.stdout_file, join(spool, 'ex-small-cut.stdout'));
    assert.equal(readFileSync(join(spool, 'ex-small-cut.stdout'), 'utf8'), `${'z'.repeat(4999)}E\n`);
    assert.ok(lstatSync(join(spool, 'ex-small-cut.stdout')).isFile());
  });

  it('sends peeks of the latest bytes while output flows past the head', async () => {
    const r = await run(conn, {
      cmd: 'i=0; while [ $i -lt 40 ]; do echo "line $i"; head -c 5000 /dev/zero; i=$((i+1)); sleep 0.1; done',
      max_output_bytes: 1000,
    }).done;
    const peeks = r.events.filter((e) => e.kind === 'peek');
    assert.ok(peeks.length >= 1, `a 4 s stream past its head gives peeks (got ${peeks.length})`);
    for (const p of peeks) {
      assert.equal(p.stream, 'stdout');
      assert.ok(p.body.length > 0 && p.body.length <= 2048);
      assert.ok((p.total ?? 0) > 1000);
    }
  });

  it('mode latest forwards at a bounded rate, newest bytes first, with exact gaps', async () => {
    const r = await run(conn, {
      cmd: 'head -c 30000000 /dev/zero; echo end',
      mode: 'latest',
      rate: 256 * 1024,
      max_output_bytes: 4096,
      output_id: 'ex-latest',
      spool_bytes: 1 << 20,
    }).done;
    const chunks = r.events.filter((e) => e.kind === 'stdout' || e.kind === 'stdout_tail');
    const forwarded = chunks.reduce((a, c) => a + c.body.length, 0);
    assert.equal(r.result.stdout_total, 30_000_004);
    assert.ok(forwarded < 5_000_000, `bounded by the rate, not the flood (forwarded ${forwarded})`);
    let end = 0;
    let gaps = 0;
    for (const c of chunks) {
      assert.ok(c.offset !== undefined && c.offset >= end, 'offsets never go back');
      if ((c.offset ?? 0) > end) gaps += 1;
      end = (c.offset ?? 0) + c.body.length;
    }
    assert.ok(gaps >= 1, 'the flood left gaps');
    assert.equal(end, 30_000_004, 'the end of the output is forwarded');
    assert.ok(
      bytesOf(chunks, 'stdout').toString().endsWith('end\n') ||
        chunks.at(-1)?.body.toString().endsWith('end\n'),
    );
    assert.equal(r.result.stdout_file, join(spool, 'ex-latest.stdout'));
    assert.equal(r.result.stdout_spooled, 1 << 20);
  });

  it('replaces a dead spawner, and refuses an exec that names the old one as stale', async () => {
    const pid = (await conn.request('exec.spawner', {})).result.pid as number;
    assert.ok(pid > 0);
    assert.equal((await conn.request('exec.spawner', {})).result.pid, pid, 'one spawner, kept');
    process.kill(pid, 'SIGKILL');
    await until('the agent to notice its spawner died', async () => {
      const now = (await conn.request('exec.spawner', {})).result.pid as number;
      return now !== pid ? now : undefined;
    });
    await assert.rejects(run(conn, { argv: ['true'], spawner: pid }).done, (e: unknown) => {
      assert.ok(e instanceof ForkboxError);
      assert.equal(e.details?.agentCode, 'stale');
      return true;
    });
    const ok = await run(conn, { cmd: 'echo again' }).done;
    assert.equal(bytesOf(ok.events, 'stdout').toString(), 'again\n');
  });

  it('keeps results of execs that ended while no host listened, for exec.results after a reconnect', async () => {
    const ended = run(conn, { cmd: 'sleep 0.3; exit 7', tag: 'ex-ended', tree: 'x-000000000001' });
    const running = run(conn, { cmd: 'sleep 30', tag: 'ex-running' });
    running.done.catch(() => undefined); // its connection is dropped below
    await until('both started', () =>
      ended.events.some((e) => e.kind === 'started') && running.events.some((e) => e.kind === 'started')
        ? true
        : undefined,
    );
    conn.close('dropped by the test');
    await assert.rejects(ended.done);
    conn = await accept();
    const got = await until('the result of ex-ended', async () => {
      const { result } = await conn.request('exec.results', {
        tags: ['ex-ended', 'ex-running', 'ex-unknown'],
      });
      const results = result.results as Record<string, Record<string, unknown>>;
      return results['ex-ended'] ? result : undefined;
    });
    const results = got.results as Record<string, Record<string, unknown>>;
    assert.equal(results['ex-ended']?.exit_code, 7);
    assert.equal(results['ex-ended']?.tree, 'x-000000000001');
    assert.ok(typeof (got.running as Record<string, unknown>)['ex-running'] === 'number');
    assert.equal(results['ex-unknown'], undefined);
    // Asked once, handed over once.
    const again = (await conn.request('exec.results', { tags: ['ex-ended'] })).result;
    assert.deepEqual(again.results, {});
    const pid = (got.running as Record<string, number>)['ex-running'] as number;
    process.kill(-pid, 'SIGKILL');
  });

  it('leaves no spool files of its own beyond the newest 32', async () => {
    for (let i = 0; i < 40; i++) {
      await run(conn, {
        cmd: 'head -c 70000 /dev/zero',
        max_output_bytes: 100,
        output_id: `ex-many-${i}`,
        spool_bytes: 1 << 20,
      }).done;
    }
    assert.ok(readdirSync(spool).length <= 32 + 1);
  });
});
