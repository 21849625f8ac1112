/**
 * Runs the real Python agent on the host (no sandbox) against a host-side unix socket, and drives it
 * through agent-connection.ts: every operation of docs/AGENT-PROTOCOL.md, plus reconnection.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ForkboxError } from '../../src/domain/errors.ts';
import { agentBoundsEnv } from '../../src/domain/limits.ts';
import {
  type AgentConnection,
  type AgentEvent,
  createAgentConnection,
  readHello,
} from '../../src/runtimes/native/agent-link/agent-connection.ts';
import { encodeFrame } from '../../src/runtimes/native/agent-link/agent-frame.ts';
import { replEvalOver } from '../../src/runtimes/native/agent-link/repl-eval.ts';
import type { ExecPeek, ReplEvalOptions } from '../../src/service/ports.ts';
import { waitFor } from '../helpers/wait-for.ts';

const AGENT = fileURLToPath(new URL('../../src/agent/agent.py', import.meta.url));
// FORKBOX_TEST_PYTHON picks another interpreter (the agent supports Python >= 3.8).
const PYTHON = process.env.FORKBOX_TEST_PYTHON ?? 'python3';
const hasPython = spawnSync(PYTHON, ['--version']).status === 0;

interface Host {
  server: net.Server;
  next(): Promise<net.Socket>;
}

function listen(path: string): Promise<Host> {
  const waiting: ((s: net.Socket) => void)[] = [];
  const queued: net.Socket[] = [];
  const server = net.createServer((s) => {
    const w = waiting.shift();
    if (w) w(s);
    else queued.push(s);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () =>
      resolve({
        server,
        next: () => {
          const s = queued.shift();
          return s ? Promise.resolve(s) : new Promise((r) => waiting.push(r));
        },
      }),
    );
  });
}

function closeServer(server: net.Server): Promise<void> {
  return new Promise((r) => server.close(() => r()));
}

interface LogLine {
  fields: Record<string, unknown>;
  msg: string;
}

/** A logger that keeps what the agent's `log` frames became on the host. */
function recordingLog(lines: LogLine[]) {
  const keep = (fields: object, msg?: string) =>
    lines.push({ fields: fields as Record<string, unknown>, msg: msg ?? '' });
  return { info: keep, warn: keep, error: keep };
}

async function accept(host: Host, lines?: LogLine[]): Promise<{ conn: AgentConnection; socket: net.Socket }> {
  const socket = await host.next();
  const hello = await readHello(socket, 5000);
  return { conn: createAgentConnection(socket, hello, lines ? { log: recordingLog(lines) } : {}), socket };
}

/** Resident memory of a process in bytes. */
function rssOf(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb ?? 0) * 1024;
}

interface ExecOutcome {
  result: Record<string, unknown>;
  stdout: Buffer;
  stderr: Buffer;
  events: AgentEvent[];
}

function runExec(
  conn: AgentConnection,
  args: Record<string, unknown>,
  onStarted?: (id: number, pid: number) => void,
  onEvent?: (id: number, ev: AgentEvent) => void,
) {
  const events: AgentEvent[] = [];
  const handle = conn.stream('exec', args, {
    onEvent: (ev) => {
      events.push(ev);
      if (ev.kind === 'started' && onStarted && ev.pid !== undefined) onStarted(handle.id, ev.pid);
      onEvent?.(handle.id, ev);
    },
  });
  const done = handle.done.then(
    (r): ExecOutcome => ({
      result: r.result,
      stdout: Buffer.concat(events.filter((e) => e.kind === 'stdout').map((e) => e.body)),
      stderr: Buffer.concat(events.filter((e) => e.kind === 'stderr').map((e) => e.body)),
      events,
    }),
  );
  return { id: handle.id, done };
}

/** repl.eval through the host's own code (repl-eval.ts), in the shape of the agent's result. */
async function repl(
  conn: AgentConnection,
  code: string,
  extra: { max_output_bytes?: number; timeout_ms?: number } = {},
) {
  const o: ReplEvalOptions = {};
  if (extra.max_output_bytes !== undefined) o.maxOutputBytes = extra.max_output_bytes;
  if (extra.timeout_ms !== undefined) o.timeoutMs = extra.timeout_ms;
  const r = await replEvalOver(conn, code, o);
  return {
    ok: r.ok,
    value: r.value,
    stdout: r.stdout,
    stderr: r.stderr,
    error: r.error,
    timed_out: r.timedOut,
    interrupted: r.interrupted,
    restarted: r.restarted,
    truncated: r.truncated,
    streams: r.streams,
  };
}

function processesInGroup(pgid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') out.push(Number(name));
    } catch {
      // process ended while we looked
    }
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function rejectsWith(p: Promise<unknown>, code: string, agentCode?: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof ForkboxError, String(e));
    assert.equal(e.code, code, e.message);
    if (agentCode !== undefined) assert.equal(e.details?.agentCode, agentCode);
    return true;
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('agent protocol (real agent on the host)', {
  skip: hasPython ? false : 'python3 is not installed',
}, () => {
  let dir = '';
  let sockPath = '';
  let host: Host;
  let agent: ChildProcess;
  let conn: AgentConnection;
  let socket: net.Socket;
  let workerPid = 0;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'forkbox-agent-test-'));
    sockPath = join(dir, 'ctl.sock');
    host = await listen(sockPath);
    agent = spawn(PYTHON, [AGENT], {
      env: {
        ...process.env,
        FORKBOX_CTL_SOCKET: sockPath,
        FORKBOX_ROLE: 'sandbox',
        FORKBOX_SANDBOX_ID: 'test1',
        FORKBOX_PREWARM: 'colorsys, json',
        FORKBOX_BOUNDS: agentBoundsEnv(),
        FORKBOX_OUTPUT_DIR: join(dir, 'out'),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const socketP = host.next();
    socket = await socketP;
    const hello = await readHello(socket, 5000);
    assert.equal(hello.sandboxId, 'test1');
    assert.equal(hello.role, 'sandbox');
    assert.equal(hello.reconnect, false);
    assert.ok(hello.workerPid !== null && hello.workerPid > 0);
    workerPid = hello.workerPid;
    conn = createAgentConnection(socket, hello);
  });

  after(async () => {
    conn?.close();
    if (agent?.pid !== undefined && agent.exitCode === null) {
      const exited = new Promise((r) => agent.once('exit', r));
      agent.kill('SIGTERM');
      await Promise.race([exited, sleep(5000)]);
      if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGKILL');
    }
    if (workerPid && alive(workerPid)) process.kill(workerPid, 'SIGKILL');
    if (host) await closeServer(host.server);
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers ping', async () => {
    const { result } = await conn.request('ping');
    assert.equal(result.pong, true);
    assert.equal(result.pid, agent.pid);
  });

  it('runs argv and cmd with exit codes, streams stdout/stderr', async () => {
    const a = await runExec(conn, { argv: ['echo', 'hi there'] }).done;
    assert.equal(a.stdout.toString(), 'hi there\n');
    assert.equal(a.result.exit_code, 0);
    assert.equal(a.result.signal, null);
    const b = await runExec(conn, { cmd: 'echo out; echo err >&2; exit 3' }).done;
    assert.equal(b.stdout.toString(), 'out\n');
    assert.equal(b.stderr.toString(), 'err\n');
    assert.equal(b.result.exit_code, 3);
    const c = await runExec(conn, { argv: ['pwd'], cwd: dir, env: { FOO: 'bar' } }).done;
    assert.equal(c.stdout.toString(), `${dir}\n`);
    const d = await runExec(conn, { cmd: 'echo $FOO', env: { FOO: 'bar' } }).done;
    assert.equal(d.stdout.toString(), 'bar\n');
    await rejectsWith(runExec(conn, { argv: ['no-such-command-xyz'] }).done, 'not_found');
    await rejectsWith(runExec(conn, { argv: ['true'], cwd: join(dir, 'missing') }).done, 'not_found');
    await rejectsWith(runExec(conn, { argv: [] }).done, 'invalid_argument', 'bad_request');
  });

  it('sends chunks with increasing seq, started first', async () => {
    // Each line waits for a line of stdin the host sends only once it got the previous chunk: three
    // stdout events arrive while the command runs, whatever the machine's speed.
    const r = await runExec(
      conn,
      { cmd: 'for i in 1 2 3; do echo $i; read ack; done', stdin: true },
      undefined,
      (id, ev) => {
        if (ev.kind === 'stdout')
          void conn.request('exec.stdin', { exec_id: id, eof: false }, { body: Buffer.from('\n') });
      },
    ).done;
    assert.equal(r.events[0]?.kind, 'started');
    assert.equal(typeof r.events[0]?.pid, 'number');
    assert.deepEqual(
      r.events.map((e) => e.seq),
      r.events.map((_, i) => i),
    );
    assert.equal(r.events.filter((e) => e.kind === 'stdout').length, 3);
    assert.equal(r.stdout.toString(), '1\n2\n3\n');
  });

  it('feeds stdin through exec.stdin (binary-safe, eof closes it)', async () => {
    const data = Buffer.from([0, 1, 2, 0xff, 0xfe, 10]);
    const h = runExec(conn, { argv: ['cat'], stdin: true });
    const w1 = await conn.request('exec.stdin', { exec_id: h.id, eof: false }, { body: data });
    assert.equal(w1.result.written, data.length);
    await conn.request('exec.stdin', { exec_id: h.id, eof: true }, { body: Buffer.from('end') });
    const r = await h.done;
    assert.deepEqual(r.stdout, Buffer.concat([data, Buffer.from('end')]));
    assert.equal(r.result.exit_code, 0);
    await rejectsWith(conn.request('exec.stdin', { exec_id: h.id, eof: true }), 'not_found');
    const noStdin = await runExec(conn, { argv: ['cat'] }).done; // /dev/null: ends at once
    assert.equal(noStdin.result.exit_code, 0);
  });

  it('reports signals, and exec.signal reaches the process group', async () => {
    const r = await runExec(conn, { cmd: 'kill -TERM $$' }).done;
    assert.equal(r.result.exit_code, null);
    assert.equal(r.result.signal, 15);
    let started: () => void = () => {};
    const isStarted = new Promise<void>((res) => {
      started = res;
    });
    const h = runExec(conn, { argv: ['sleep', '100'] }, () => started());
    await isStarted;
    await conn.request('exec.signal', { exec_id: h.id, signal: 9 });
    const s = await h.done;
    assert.equal(s.result.signal, 9);
  });

  it('timeout kills the whole process group', async () => {
    const r = await runExec(conn, { cmd: 'sleep 100 & sleep 100', timeout_ms: 300 }).done;
    assert.equal(r.result.timed_out, true);
    assert.equal(r.result.signal, 9);
    // Both sleeps would live 100 s: the group empties only because the timeout killed it.
    await waitFor(() => processesInGroup(r.result.pid as number).length === 0, {
      what: `the timed-out exec's process group ${r.result.pid} is empty`,
    });
  });

  it('keeps a head and a tail of each stream within max_output_bytes, and counts the rest', async () => {
    const r = await runExec(conn, { cmd: 'head -c 200000 /dev/zero; echo done >&2', max_output_bytes: 1000 })
      .done;
    // Per stream: a head of 750 bytes (forwarded at once) and a tail of 250 (sent before the result).
    assert.equal(r.stdout.length, 750);
    const tail = Buffer.concat(r.events.filter((e) => e.kind === 'stdout_tail').map((e) => e.body));
    assert.equal(tail.length, 250);
    assert.equal(r.stderr.toString(), 'done\n');
    assert.equal(r.result.stdout_total, 200000);
    assert.equal(r.result.stderr_total, 5);
    assert.equal(r.result.stdout_file, null, 'no output_id: nothing spooled');
    assert.equal(r.result.truncated, true);
    assert.equal(r.result.exit_code, 0);
  });

  it('cancel kills a running exec', async () => {
    const h = runExec(conn, { cmd: 'sleep 100' }, (id) => conn.cancel(id));
    const r = await h.done;
    assert.equal(r.result.cancelled, true);
    assert.equal(r.result.signal, 9);
  });

  it('serves a file.read while a long exec runs', async () => {
    writeFileSync(join(dir, 'c.txt'), 'concurrent');
    let finished = false;
    const h = runExec(conn, { cmd: 'sleep 1' });
    void h.done.then(() => {
      finished = true;
    });
    const r = await conn.request('file.read', { path: join(dir, 'c.txt') });
    assert.equal(r.body.toString(), 'concurrent');
    assert.equal(finished, false);
    assert.equal((await h.done).result.exit_code, 0);
  });

  it('file write/read (binary, atomic, offset), list, stat, delete, mkdir, move and their errors', async () => {
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const f = join(dir, 'files', 'a.bin');
    await rejectsWith(conn.request('file.write', { path: f }, { body: all }), 'not_found', 'not_found');
    const w = await conn.request('file.write', { path: f, create_dirs: true, mode: 0o600 }, { body: all });
    assert.equal(w.result.size, 256);
    assert.deepEqual(readdirSync(join(dir, 'files')), ['a.bin']); // no temp file left behind
    const r = await conn.request('file.read', { path: f });
    assert.deepEqual(r.body, all);
    assert.equal(r.result.size, 256);
    assert.equal(r.result.mode, 0o600);
    assert.equal(r.result.eof, true);
    const part = await conn.request('file.read', { path: f, offset: 10, length: 5 });
    assert.deepEqual(part.body, all.subarray(10, 15));
    assert.equal(part.result.eof, false);
    await conn.request('file.write', { path: f, append: true }, { body: Buffer.from('xyz') });
    assert.equal(readFileSync(f).length, 259);
    await rejectsWith(conn.request('file.read', { path: join(dir, 'nope') }), 'not_found', 'not_found');
    await rejectsWith(conn.request('file.read', { path: dir }), 'invalid_argument', 'is_a_directory');
    await rejectsWith(
      conn.request('file.write', { path: dir }, { body: all }),
      'invalid_argument',
      'is_a_directory',
    );
    await rejectsWith(
      conn.request('file.write', { path: join(f, 'x') }),
      'invalid_argument',
      'not_a_directory',
    );

    await conn.request('file.mkdir', { path: join(dir, 'files', 'sub', 'deep') });
    await rejectsWith(
      conn.request('file.mkdir', { path: join(dir, 'files', 'sub'), parents: false }),
      'already_exists',
    );
    symlinkSync('a.bin', join(dir, 'files', 'link'));
    const top = await conn.request('file.list', { path: join(dir, 'files') });
    const names = (top.result.entries as { name: string; type: string }[]).map((e) => `${e.name}:${e.type}`);
    assert.deepEqual(names, ['a.bin:file', 'link:symlink', 'sub:dir']);
    assert.equal(top.result.truncated, false);
    const rec = await conn.request('file.list', { path: join(dir, 'files'), recursive: true });
    assert.ok(
      (rec.result.entries as { path: string }[]).some((e) => e.path === join(dir, 'files', 'sub', 'deep')),
    );
    const lim = await conn.request('file.list', { path: join(dir, 'files'), recursive: true, limit: 2 });
    assert.equal(lim.result.truncated, true);
    await rejectsWith(conn.request('file.list', { path: f }), 'invalid_argument', 'not_a_directory');

    const st = await conn.request('file.stat', { path: join(dir, 'files', 'link') });
    assert.equal(st.result.type, 'symlink');
    assert.equal(st.result.link_target, 'a.bin');
    await rejectsWith(conn.request('file.stat', { path: join(dir, 'zzz') }), 'not_found');

    writeFileSync(join(dir, 'files', 'b.txt'), 'b');
    await rejectsWith(
      conn.request('file.move', { from: join(dir, 'files', 'b.txt'), to: f }),
      'already_exists',
      'exists',
    );
    await conn.request('file.move', { from: join(dir, 'files', 'b.txt'), to: f, overwrite: true });
    assert.equal(readFileSync(f, 'utf8'), 'b');
    await conn.request('file.move', { from: f, to: join(dir, 'files', 'c.txt') });
    await rejectsWith(conn.request('file.move', { from: f, to: join(dir, 'x') }), 'not_found');

    await rejectsWith(
      conn.request('file.delete', { path: join(dir, 'files', 'sub') }),
      'invalid_argument',
      'is_a_directory',
    );
    await conn.request('file.delete', { path: join(dir, 'files', 'link') });
    await conn.request('file.delete', { path: join(dir, 'files', 'sub'), recursive: true });
    assert.deepEqual(readdirSync(join(dir, 'files')), ['c.txt']);
    await rejectsWith(conn.request('file.delete', { path: join(dir, 'files', 'sub') }), 'not_found');
  });

  it('repl keeps state, returns values, survives errors and SystemExit, captures subprocess output', async () => {
    assert.equal((await repl(conn, "import sys\n'colorsys' in sys.modules")).value, 'True'); // FORKBOX_PREWARM
    assert.equal((await repl(conn, 'x = 41\nx + 1')).value, '42');
    const err = await repl(conn, '1/0');
    assert.equal(err.ok, false);
    assert.equal(err.error?.type, 'ZeroDivisionError');
    assert.match(err.error?.traceback ?? '', /1\/0/);
    assert.doesNotMatch(err.error?.traceback ?? '', /worker\.py/);
    assert.equal((await repl(conn, 'x')).value, '41');
    const ex = await repl(conn, 'raise SystemExit(3)');
    assert.equal(ex.error?.type, 'SystemExit');
    assert.equal(ex.restarted, false);
    assert.equal((await repl(conn, 'x')).value, '41');
    assert.equal((await repl(conn, 'None')).value, null);
    const out = await repl(
      conn,
      "import os, sys\nprint('py')\nos.system('echo hi')\nsys.stderr.write('e\\n')\n_ = 1",
    );
    assert.equal(out.stdout, 'py\nhi\n');
    assert.equal(out.stderr, 'e\n');
    assert.equal(out.value, null);
    const big = await repl(conn, "print('y' * 1_500_000)", { max_output_bytes: 2_000_000 });
    assert.equal(big.stdout.length, 1_500_001); // head events, within the budget: nothing left out
    assert.equal(big.truncated, false);
    // Over the budget: the head (75 bytes), a marker naming the file, the tail (25 bytes).
    const cut = await repl(conn, "print('z' * 4999 + 'E')", { max_output_bytes: 100 });
    assert.equal(cut.truncated, true);
    assert.equal(cut.streams?.stdout.totalBytes, 5001);
    assert.equal(cut.streams?.stdout.shownBytes, 100);
    assert.equal(cut.streams?.stdout.omittedBytes, 4901);
    const file = cut.streams?.stdout.file ?? '';
    assert.ok(file.startsWith(join(dir, 'out')), file);
    assert.equal(readFileSync(file, 'utf8'), `${'z'.repeat(4999)}E\n`); // the whole stream
    assert.ok(cut.stdout.startsWith('z'.repeat(75)));
    assert.ok(cut.stdout.endsWith(`${'z'.repeat(23)}E\n`));
    assert.match(cut.stdout, /4901 bytes of stdout omitted here; the whole stdout is in /);
  });

  it('the agent holds no fd of its runtime: fds 0-2 are /dev/null, the worker has only its end of the link', () => {
    const fds = (pid: number) =>
      readdirSync(`/proc/${pid}/fd`).map((fd) => ({
        fd: Number(fd),
        target: readlinkSync(`/proc/${pid}/fd/${fd}`),
      }));
    const agentFds = fds(agent.pid ?? 0);
    for (const f of agentFds.filter((x) => x.fd <= 2))
      assert.equal(f.target, '/dev/null', `agent fd ${f.fd}`);
    const workerFds = fds(workerPid);
    for (const f of workerFds.filter((x) => x.fd <= 2))
      assert.equal(f.target, '/dev/null', `worker fd ${f.fd}`);
    const agentSockets = new Set(agentFds.map((f) => f.target).filter((t) => t.startsWith('socket:')));
    const shared = workerFds.filter((f) => agentSockets.has(f.target));
    assert.deepEqual(
      shared,
      [],
      'the worker holds a socket the agent holds (its end of the link, or the host link)',
    );
  });

  it('repl output goes through bounded pipes: a flood keeps the agent small, the REPL usable', async () => {
    await repl(conn, 'kept = "flood"');
    const before = rssOf(agent.pid ?? 0);
    // 256 MiB in 1 MiB lines; inline budget 64 KiB per stream, a 1 MiB spool file.
    const peeks: ExecPeek[] = [];
    const r = await replEvalOver(
      conn,
      "line = 'f' * ((1 << 20) - 1)\nfor _ in range(256):\n    print(line)\nprint('END')",
      {
        maxOutputBytes: 64 * 1024,
        spoolBytes: 1 << 20,
        onPeek: (p) => peeks.push(p),
      },
    );
    assert.equal(r.ok, true, r.error?.traceback);
    assert.equal(r.truncated, true);
    assert.equal(r.streams?.stdout.totalBytes, 256 * (1 << 20) + 4);
    assert.equal(r.streams?.stdout.shownBytes, 64 * 1024);
    assert.equal(r.streams?.stdout.spooledBytes, 1 << 20);
    assert.ok(r.stdout.endsWith('f\nEND\n'), r.stdout.slice(-40));
    // The spool file stopped at its cap: the marker says which bytes are in it and which were not kept.
    assert.match(
      r.stdout,
      /bytes of stdout omitted here; bytes 0-1048576 of stdout are in \S+ inside the sandbox \(read it in pages\); bytes 1048576-\d+ were not kept/,
    );
    // The first peek goes out as soon as the head is full: the latest bytes and the count so far.
    assert.ok(peeks.length > 0, 'a peek while the output flowed past the head');
    for (const p of peeks) {
      assert.equal(p.stream, 'stdout');
      assert.ok(p.data.length > 0 && p.data.length <= 2048);
      assert.ok(p.totalBytes >= 48 * 1024 && p.totalBytes <= 256 * (1 << 20) + 4, String(p.totalBytes));
    }
    // The agent held at most a head and a tail ring per stream, not the 256 MiB.
    const growth = rssOf(agent.pid ?? 0) - before;
    assert.ok(growth < 32 * 1024 * 1024, `the agent grew by ${growth} bytes`);
    assert.equal((await repl(conn, 'kept')).value, "'flood'");
  });

  it('a cancelled eval is interrupted and keeps its state; one that ignores the interrupt gets a restart', async () => {
    await repl(conn, 'kept = 7');
    const busy = async () => (await conn.request('stats')).result.repl_busy === true;
    const ac = new AbortController();
    const running = replEvalOver(conn, 'while True:\n    pass', { signal: ac.signal });
    await waitFor(busy, { what: 'the eval to run' });
    ac.abort();
    const r = await running;
    assert.equal(r.cancelled, true);
    assert.equal(r.interrupted, true);
    assert.equal(r.restarted, false);
    assert.equal(r.error?.type, 'KeyboardInterrupt');
    assert.equal((await repl(conn, 'kept')).value, '7');
    // Abort once the code is inside its try (it says so): an earlier interrupt would end it.
    const ac2 = new AbortController();
    const stuck = replEvalOver(
      conn,
      "while True:\n    try:\n        print('inside', flush=True)\n        while True: pass\n    except KeyboardInterrupt:\n        pass",
      { signal: ac2.signal, onOutput: () => ac2.abort() },
    );
    const s2 = await stuck;
    assert.equal(s2.cancelled, true);
    assert.equal(s2.restarted, true);
    assert.equal(s2.error?.type, 'WorkerRestarted');
    workerPid = (await conn.request('stats')).result.worker_pid as number;
    // A cancelled caller may never see its own answer: the next answered eval says the state was lost...
    const next = await repl(conn, '1 + 1');
    assert.equal(next.value, '2');
    assert.equal(next.restarted, true, 'the first answer after an untold restart says restarted');
    // ...once.
    assert.equal((await repl(conn, 'x = 41')).restarted, false); // x: what the next test starts from
  });

  it('repl timeout interrupts an infinite loop and keeps state; restart loses it', async () => {
    const r = await repl(conn, 'while True:\n    pass', { timeout_ms: 300 });
    assert.equal(r.timed_out, true);
    assert.equal(r.interrupted, true);
    assert.equal(r.restarted, false);
    assert.equal(r.error?.type, 'KeyboardInterrupt');
    assert.equal((await repl(conn, 'x')).value, '41');
    const stuck = await repl(
      conn,
      'import time\nwhile True:\n    try:\n        time.sleep(10)\n    except KeyboardInterrupt:\n        pass',
      {
        timeout_ms: 200,
      },
    );
    assert.equal(stuck.restarted, true);
    assert.equal(stuck.timed_out, true);
    await repl(conn, 'x = 41');
    // repl.interrupt stops a running eval; cancel of a queued one removes it before it starts.
    const running = repl(conn, 'import time\ntime.sleep(30)');
    const queued = conn.stream('repl.eval', { code: 'x = 0' }, {});
    await waitFor(async () => (await conn.request('stats')).result.repl_busy === true, {
      what: 'the agent reports its REPL busy with the 30 s sleep',
    });
    conn.cancel(queued.id);
    await conn.request('repl.interrupt');
    const ir = await running;
    assert.equal(ir.interrupted, true);
    assert.equal(ir.timed_out, false);
    assert.equal(ir.error?.type, 'KeyboardInterrupt');
    const qr = (await queued.done).result as { error: { type: string } | null };
    assert.equal(qr.error?.type, 'Cancelled');
    assert.equal((await repl(conn, 'x')).value, '41');
    const before = (await conn.request('stats')).result.worker_pid;
    const rs = await conn.request('repl.restart');
    assert.notEqual(rs.result.worker_pid, before);
    workerPid = rs.result.worker_pid as number;
    const gone = await repl(conn, 'x');
    assert.equal(gone.error?.type, 'NameError');
    const died = await repl(conn, 'import os\nos._exit(3)'); // the worker dies: a fresh one replaces it
    assert.equal(died.restarted, true);
    assert.equal(died.error?.type, 'WorkerRestarted');
    workerPid = (await conn.request('stats')).result.worker_pid as number;
    assert.notEqual(workerPid, rs.result.worker_pid);
    await repl(conn, 'x = 41');
  });

  it('fork: become_child turns a forked copy of the worker into an agent that keeps the REPL state', async () => {
    // The real forking module (namespaces, pivot_root) needs a sandbox; this stand-in only forks, so the
    // agent side of the contract (become_child, hello, adopt the worker after welcome) runs on the host.
    const fakeForking = [
      'import os',
      'def fork_children(children, become_child, greet, skip_fds=()):',
      '    out = []',
      '    for i, spec in enumerate(children):',
      '        pid = os.fork()',
      '        if pid == 0:',
      '            become_child(dict(spec, fork_index=i))',
      "        out.append({'sandbox_id': spec['sandbox_id'], 'ok': True, 'pid': pid})",
      '    return out',
    ].join('\n');
    await repl(
      conn,
      `import sys, types\n_m = types.ModuleType('forking')\nexec(${JSON.stringify(fakeForking)}, _m.__dict__)\nsys.modules['forking'] = _m\nforked_value = [1, 2, 3]`,
    );
    const childSock = join(dir, 'child.sock');
    const childHost = await listen(childSock);
    const childEnv = { FORKBOX_CTL_SOCKET: childSock };
    const res = await conn.request('fork', {
      children: [{ sandbox_id: 'child1', nonce: 'n1', hostname: 'c1', root: '/', inbox: dir, env: childEnv }],
    });
    const kids = res.result.children as { sandbox_id: string; ok: boolean; pid: number }[];
    assert.equal(kids.length, 1);
    assert.equal(kids[0]?.ok, true);
    const childPid = kids[0]?.pid as number;
    let childWorker = 0;
    try {
      const child = await accept(childHost);
      assert.equal(child.conn.hello.sandboxId, 'child1');
      assert.equal(child.conn.hello.nonce, 'n1');
      assert.equal(child.conn.hello.reconnect, false);
      assert.equal((await child.conn.request('ping')).result.pid, childPid);
      const v = await repl(
        child.conn,
        'import os\n(forked_value, x, os.environ["FORKBOX_SANDBOX_ID"], os.environ["FORKBOX_PARENT_ID"], os.environ["FORKBOX_FORK_INDEX"], "FORKBOX_NONCE" in os.environ)',
      );
      assert.equal(v.value, "([1, 2, 3], 41, 'child1', 'test1', '0', False)");
      childWorker = (await child.conn.request('stats')).result.worker_pid as number;
      assert.ok(childWorker > 0 && childWorker !== workerPid);
      await repl(child.conn, 'forked_value.append(4)');
      assert.equal((await repl(conn, 'forked_value')).value, '[1, 2, 3]'); // the source's copy is its own
      const e = await runExec(child.conn, { argv: ['echo', 'from child'] }).done;
      assert.equal(e.stdout.toString(), 'from child\n');
      child.conn.close();
    } finally {
      for (const pid of [childPid, childWorker]) if (pid > 0 && alive(pid)) process.kill(pid, 'SIGKILL');
      await closeServer(childHost.server);
    }
  });

  it('drops the connection on a malformed frame from the host, then reconnects', async () => {
    const closed = new Promise<ForkboxError>((r) => conn.on('close', r));
    const pending = conn.request('exec', { cmd: 'sleep 5' });
    socket.write(Buffer.from([0, 0, 0, 1, 0, 0, 0, 0, 0x7b])); // header length 1: out of bounds
    await rejectsWith(pending, 'sandbox_gone');
    assert.equal((await closed).code, 'sandbox_gone');
    ({ conn, socket } = await accept(host));
    assert.equal(conn.hello.reconnect, true);
    assert.equal((await conn.request('ping')).result.pong, true);
    assert.equal((await repl(conn, 'x')).value, '41');
  });

  it('reconnects to a new server on the same path and keeps its REPL state; its log comes as log frames', async () => {
    await repl(conn, 'y = "kept"');
    conn.close();
    await closeServer(host.server);
    rmSync(sockPath, { force: true });
    // A server that drops every connection: once one arrived, the agent is retrying with backoff.
    let attempts = 0;
    const refuser = net.createServer((c) => {
      attempts++;
      c.destroy();
    });
    await new Promise<void>((r) => refuser.listen(sockPath, r));
    await waitFor(() => attempts > 0, { what: 'the agent tries to reconnect' });
    await closeServer(refuser);
    rmSync(sockPath, { force: true });
    host = await listen(sockPath);
    const lines: LogLine[] = [];
    ({ conn, socket } = await accept(host, lines));
    assert.equal(conn.hello.reconnect, true);
    assert.equal(conn.hello.workerPid, workerPid);
    assert.equal((await repl(conn, 'y')).value, "'kept'");
    // What the agent logged while no host listened arrives once one does, as a field under a fixed message.
    await waitFor(() => lines.length > 0, { what: 'a log line of the agent' });
    assert.equal(lines[0]?.msg, 'sandbox agent log');
    assert.equal(lines[0]?.fields.sandbox, 'test1');
    assert.match(String(lines[0]?.fields.text), /host connection lost/);
  });

  it('host side: a malformed frame from an agent rejects its requests with agent_protocol', async () => {
    const fakePath = join(dir, 'fake.sock');
    const fakeHost = await listen(fakePath);
    const client = net.connect(fakePath);
    const hello = {
      t: 'hello',
      v: 1,
      role: 'sandbox',
      sandbox_id: 'fake',
      nonce: '',
      agent_version: 'x',
      worker_pid: null,
      reconnect: false,
    };
    client.write(encodeFrame(hello));
    const fake = await accept(fakeHost);
    const p = fake.conn.request('ping');
    const p2 = fake.conn.request('ping');
    client.write(encodeFrame({ t: 'res', id: 1, ok: 'yes' }));
    await rejectsWith(p, 'agent_protocol');
    await rejectsWith(p2, 'agent_protocol');
    assert.equal(fake.conn.closed, true);
    client.destroy();
    await closeServer(fakeHost.server);
  });

  it('shuts down on SIGTERM and takes its worker with it', async () => {
    const exited = new Promise<number | null>((r) => agent.once('exit', (code) => r(code)));
    agent.kill('SIGTERM');
    assert.equal(await exited, 0);
    assert.equal(alive(workerPid), false); // reaped by the agent before it exited
  });
});
