/**
 * The CLI's sandbox commands on the real thing — `bin/forkbox.js` as a child process against a real
 * `forkbox serve` on a fresh state dir, real sandboxes: `run`, `cp`, `inspect`, `pause` and `resume`
 * (the unit tests of these use a fake API; this proves them end to end); and `run` starting the daemon
 * when none answers.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { SandboxInfo } from '../../src/service/api.ts';
import { isFrozen, sandboxCgroupRel } from '../helpers/cgroup-files.ts';
import { type Cli, cliFor, sandboxProcesses, waitFor } from '../helpers/cli.ts';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';

const skip = nativeUnavailable();

describe('CLI sandbox commands against a real daemon', { skip: skip ?? false }, () => {
  let stateDir: string;
  let daemon: ServedDaemon | undefined;
  let cli: Cli;
  let host: string;

  before(async () => {
    stateDir = makeStateDir();
    daemon = await startServe(stateDir);
    cli = cliFor(stateDir);
    host = mkdtempSync(join(tmpdir(), 'fbx-cli-cp-'));
  });
  after(async () => {
    rmSync(host, { recursive: true, force: true });
    await stopServeAndClean(daemon?.child, stateDir);
  });

  it('run: a fresh sandbox per command, its exit code and streams, stdin, options; then killed', () => {
    const r = cli.run(['run', '--', 'sh', '-c', 'echo out; echo err >&2; exit 3']);
    assert.equal(r.status, 3, r.stderr);
    assert.equal(r.stdout, 'out\n');
    assert.match(r.stderr, /^err$/m);

    const piped = cli.run(['run', '--', 'cat'], { input: 'from the host\n' });
    assert.equal(piped.status, 0, piped.stderr);
    assert.equal(piped.stdout, 'from the host\n');

    const opts = cli.run([
      'run',
      '--memory',
      '256m',
      '--env',
      'GREETING=hi',
      '--cwd',
      '/tmp',
      '-c',
      'echo $GREETING $(pwd)',
    ]);
    assert.equal(opts.status, 0, opts.stderr);
    assert.equal(opts.stdout, 'hi /tmp\n');

    // Killed by a signal: 128+n, as a shell reports it.
    assert.equal(cli.run(['run', '--', 'sh', '-c', 'kill -TERM $$']).status, 143);

    const json = cli.json<{ exitCode: number; stdout: string }>('run', '--', 'echo', 'structured');
    assert.equal(json.exitCode, 0);
    assert.equal(json.stdout, 'structured\n');

    // Every run's sandbox was killed before the CLI returned.
    const runs = cli.json<SandboxInfo[]>('ls', '--all').filter((s) => s.labels['forkbox.run'] === 'true');
    assert.equal(runs.length, 5);
    assert.deepEqual(
      runs.map((s) => s.state),
      runs.map(() => 'killed'),
    );
    assert.deepEqual(
      cli.json<SandboxInfo[]>('ls').filter((s) => s.labels['forkbox.run'] === 'true'),
      [],
    );
  });

  it('cp: files and directories both ways, into a directory, and the errors', () => {
    const { id } = cli.json<SandboxInfo>('create', '--name', 'cp-box');
    const file = join(host, 'note.txt');
    writeFileSync(file, 'hello sandbox\n', { mode: 0o640 });
    cli.ok('cp', file, `${id}:/root/note.txt`);
    assert.equal(cli.ok('exec', id, '--', 'cat', '/root/note.txt'), 'hello sandbox\n');
    assert.equal(cli.ok('exec', id, '--', 'stat', '-c', '%a', '/root/note.txt'), '640\n');
    // A trailing slash (or an existing directory) means "into it", by name; ids and names both work.
    cli.ok('cp', file, 'cp-box:/tmp/');
    assert.equal(cli.ok('exec', id, '--', 'cat', '/tmp/note.txt'), 'hello sandbox\n');

    const tree = join(host, 'tree');
    mkdirSync(join(tree, 'sub'), { recursive: true });
    writeFileSync(join(tree, 'a.txt'), 'A');
    writeFileSync(join(tree, 'sub', 'b.bin'), Buffer.from([0, 1, 2, 255]));
    const pushed = cli.ok('cp', tree, `${id}:/srv/tree`);
    assert.match(pushed, /copied 2 file\(s\), 2 dir\(s\), 5 bytes/);
    assert.equal(cli.ok('exec', id, '--', 'cat', '/srv/tree/a.txt'), 'A');

    cli.ok(
      'exec',
      id,
      '--',
      'sh',
      '-c',
      'mkdir -p /data/x && printf made > /data/x/y && printf top > /data/t',
    );
    const back = join(host, 'back');
    cli.ok('cp', `${id}:/data`, back);
    assert.equal(readFileSync(join(back, 'x', 'y'), 'utf8'), 'made');
    assert.equal(readFileSync(join(back, 't'), 'utf8'), 'top');
    cli.ok('cp', `${id}:/srv/tree/sub/b.bin`, host);
    assert.deepEqual([...readFileSync(join(host, 'b.bin'))], [0, 1, 2, 255]);
    assert.ok(statSync(join(host, 'b.bin')).isFile());

    assert.match(cli.fails(2, 'cp', file, join(host, 'copy')), /exactly one of SRC and DST/);
    assert.match(cli.fails(3, 'cp', join(host, 'missing'), `${id}:/root/x`), /no such file/);
    assert.match(cli.fails(3, 'cp', `${id}:/nope`, host), /nope|not found|no such/i);
    cli.ok('kill', id);
  });

  it('inspect: limits, labels, live usage; an ended sandbox still shows', () => {
    const sb = cli.json<SandboxInfo>(
      'create',
      '--name',
      'seen',
      '--memory',
      '256m',
      '--label',
      'team=qa',
      '--ttl',
      '1h',
    );
    const info = cli.json<SandboxInfo>('inspect', 'seen');
    assert.equal(info.id, sb.id);
    assert.equal(info.limits.memoryBytes, 256 * 1024 * 1024);
    assert.deepEqual(info.labels, { team: 'qa' });
    assert.ok(info.usage, 'a live sandbox reports its usage');
    assert.ok(info.usage.pids >= 1, 'its agent runs');
    assert.notEqual(info.expiresAt, null);
    const human = cli.ok('inspect', sb.id);
    assert.match(human, /^name\s+seen$/m);
    assert.match(human, /^memory\s+256 MiB$/m);
    assert.match(human, /^labels\s+team=qa$/m);
    assert.match(human, /^processes\s+\d+$/m);
    cli.ok('kill', sb.id);
    const ended = cli.json<SandboxInfo>('inspect', sb.id);
    assert.equal(ended.state, 'killed');
    assert.match(cli.ok('inspect', sb.id), /^state\s+killed$/m);
    assert.match(cli.fails(3, 'inspect', 'no-such-box'), /no-such-box/);
  });

  it('pause freezes every process (no CPU, exec refused); resume brings the same processes back', async () => {
    const { id } = cli.json<SandboxInfo>('create');
    // A busy loop that outlives the exec that started it.
    cli.ok('exec', id, '--', 'sh', '-c', 'nohup sh -c "while :; do :; done" >/dev/null 2>&1 &');
    const before = sandboxProcesses(cli, id);
    assert.equal(before.length, 1, `one busy loop: ${before.join(', ')}`);
    const cpu = () => cli.json<SandboxInfo>('inspect', id).usage?.cpuUsageNs ?? Number.NaN;
    // Positive control: while running, its CPU time grows.
    const c0 = cpu();
    await waitFor(() => (cpu() > c0 ? true : undefined), 'CPU time to grow while running');

    const paused = cli.json<SandboxInfo>('pause', id);
    assert.equal(paused.state, 'paused');
    assert.equal(cli.json<SandboxInfo>('inspect', id).state, 'paused');
    // The kernel holds every process of it stopped: its group is frozen, so no CPU time is added
    // between two looks, however far apart (here: a refused exec, a whole CLI round trip).
    assert.equal(isFrozen(sandboxCgroupRel(stateDir, id)), true, 'its cgroup is frozen');
    const p0 = cpu();
    assert.match(cli.fails(4, 'exec', id, '--', 'true'), /paused.*forkbox resume/);
    assert.equal(cpu(), p0, 'no CPU time while paused');

    assert.equal(cli.json<SandboxInfo>('resume', id).state, 'running');
    assert.equal(isFrozen(sandboxCgroupRel(stateDir, id)), false, 'its cgroup is thawed');
    assert.deepEqual(sandboxProcesses(cli, id), before, 'the same process, alive');
    const r0 = cpu();
    await waitFor(() => (cpu() > r0 ? true : undefined), 'CPU time to grow again after resume');
    assert.match(cli.ok('pause', id), new RegExp(`^${id} paused$`, 'm'));
    assert.match(cli.ok('resume', id), new RegExp(`^${id} running$`, 'm'));
    cli.ok('kill', id);
    assert.match(cli.fails(4, 'pause', id), /killed, not running/);
  });

  it("create --port and port: print the host address where the sandbox's server answers", async () => {
    const c = cli.run(['create', '--port', '8000', '--port', '8001']);
    assert.equal(c.status, 0, c.stderr);
    const id = c.stdout.trim();
    const shown = cli.run(['port', id, '8000']);
    assert.equal(shown.status, 0, shown.stderr);
    const address = shown.stdout.trim();
    assert.match(address, /^127\.0\.0\.2:\d+$/);
    const bg = cli.run([
      'exec',
      id,
      '--',
      'sh',
      '-c',
      'echo served > /tmp/s.txt; python3 -m http.server 8000 --bind 127.0.0.1 --directory /tmp >/dev/null 2>&1 &',
    ]);
    assert.equal(bg.status, 0, bg.stderr);
    const body = await waitFor(
      async () => {
        const r = await fetch(`http://${address}/s.txt`, { signal: AbortSignal.timeout(5000) }).catch(
          () => null,
        );
        return r?.status === 200 ? r.text() : undefined;
      },
      'the published server answers',
      20_000,
    );
    assert.equal(body, 'served\n');
    assert.equal(cli.run(['port', id, '70000']).status, 2, 'a port out of range is a usage error');
    assert.equal(cli.run(['kill', id]).status, 0);
  });

  it('run starts the daemon when none answers on the state dir (as root), and leaves it running', async () => {
    const fresh = makeStateDir();
    let pid: number | undefined;
    try {
      const r = cliFor(fresh).run(['run', '--', 'echo', 'started']);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout, 'started\n');
      pid = Number(readFileSync(join(fresh, 'lock.pid'), 'utf8').trim());
      process.kill(pid, 0); // the daemon outlives the CLI that started it
      assert.ok(existsSync(join(fresh, 'daemon.log')));
      assert.deepEqual(cliFor(fresh).json<SandboxInfo[]>('ls'), [], 'the run sandbox was killed');
    } finally {
      if (pid !== undefined) {
        process.kill(pid, 'SIGTERM');
        const gone = pid;
        await waitFor(() => {
          try {
            process.kill(gone, 0);
            return undefined;
          } catch {
            return true;
          }
        }, `daemon ${pid} to exit`);
      }
      await stopServeAndClean(undefined, fresh);
    }
  });
});
