import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CommanderError } from 'commander';
import { defaultStateDir } from '../../src/cli/config.ts';
import { createOutput, exitCodeFor, table } from '../../src/cli/output/output.ts';
import {
  execExitStatus,
  parseCpOperand,
  parseDuration,
  parseDurationSeconds,
  parseKeyValue,
  parseReplLanguage,
  parseSize,
  parseSizeMb,
} from '../../src/cli/parse.ts';
import { ERROR_CODES, ForkboxError } from '../../src/domain/errors.ts';
import { runCliInProcess } from '../helpers/cli-in-process.ts';
import { createTestEngine, type RecordedApi } from '../helpers/test-engine.ts';

const MiB = 1024 * 1024;

describe('cli value parsing', () => {
  it('parses a REPL language, nodejs being node', () => {
    assert.equal(parseReplLanguage('python'), 'python');
    assert.equal(parseReplLanguage('node'), 'node');
    assert.equal(parseReplLanguage('nodejs'), 'node');
    assert.throws(
      () => parseReplLanguage('bash'),
      (e: unknown) =>
        e instanceof ForkboxError && e.code === 'invalid_argument' && /give python or node/.test(e.message),
    );
  });

  it('parses sizes', () => {
    assert.equal(parseSize('512m'), 512 * MiB);
    assert.equal(parseSize('2g'), 2048 * MiB);
    assert.equal(parseSize('2GiB'), 2048 * MiB);
    assert.equal(parseSize('1.5G'), 1536 * MiB);
    assert.equal(parseSize('64k'), 64 * 1024);
    assert.equal(parseSize('256'), 256 * MiB, 'a bare number is MiB');
    assert.equal(parseSizeMb('1536k'), 2, 'rounds up to whole MiB');
    for (const bad of ['', 'm', '12q', '-1g', '0', '1..2g']) {
      assert.throws(
        () => parseSize(bad),
        (e: unknown) => e instanceof ForkboxError && e.code === 'invalid_argument',
        bad,
      );
    }
  });

  it('parses durations', () => {
    assert.equal(parseDuration('30m'), 1800);
    assert.equal(parseDuration('2h'), 7200);
    assert.equal(parseDuration('3600'), 3600);
    assert.equal(parseDuration('1h30m'), 5400);
    assert.equal(parseDuration('90s'), 90);
    assert.equal(parseDuration('500ms'), 0.5);
    assert.equal(parseDuration('1d'), 86400);
    assert.equal(parseDurationSeconds('1.5s'), 2);
    for (const bad of ['', 'h', '5x', '1h 30m', '0', '0s', '-5m', '30m!']) {
      assert.throws(() => parseDuration(bad), /not a duration/, bad);
    }
  });

  it('parses KEY=VALUE', () => {
    assert.deepEqual(parseKeyValue('A=b'), ['A', 'b']);
    assert.deepEqual(parseKeyValue('A=b=c'), ['A', 'b=c']);
    assert.deepEqual(parseKeyValue('A='), ['A', '']);
    assert.throws(() => parseKeyValue('=x', '--env'), /--env '=x' must be written KEY=VALUE/);
    assert.throws(() => parseKeyValue('novalue'), /KEY=VALUE/);
  });

  it('splits ID:/path operands from host paths', () => {
    assert.deepEqual(parseCpOperand('sb-1:/etc/hosts'), {
      kind: 'sandbox',
      sandbox: 'sb-1',
      path: '/etc/hosts',
    });
    assert.deepEqual(parseCpOperand('box:tmp/x'), { kind: 'sandbox', sandbox: 'box', path: '/tmp/x' });
    assert.deepEqual(parseCpOperand('box:'), { kind: 'sandbox', sandbox: 'box', path: '/' });
    assert.deepEqual(parseCpOperand('./a:b'), { kind: 'host', path: './a:b' });
    assert.deepEqual(parseCpOperand('/abs/path'), { kind: 'host', path: '/abs/path' });
    assert.deepEqual(parseCpOperand('rel/file.txt'), { kind: 'host', path: 'rel/file.txt' });
  });

  it('computes exec exit statuses shell-style', () => {
    assert.equal(execExitStatus({ exitCode: 0, signal: null, timedOut: false }), 0);
    assert.equal(execExitStatus({ exitCode: 3, signal: null, timedOut: false }), 3);
    assert.equal(execExitStatus({ exitCode: null, signal: 9, timedOut: true }), 137);
    assert.equal(execExitStatus({ exitCode: null, signal: 15, timedOut: false }), 143);
    assert.equal(execExitStatus({ exitCode: null, signal: null, timedOut: true }), 124);
  });

  it('maps errors to exit codes in one place', () => {
    for (const [code, spec] of Object.entries(ERROR_CODES)) {
      assert.equal(exitCodeFor(new ForkboxError(code as keyof typeof ERROR_CODES, 'x')), spec.exit, code);
    }
    assert.equal(exitCodeFor(new Error('bug')), ERROR_CODES.internal.exit);
    assert.equal(exitCodeFor(new CommanderError(1, 'commander.unknownOption', 'bad')), 2);
    assert.equal(exitCodeFor(new CommanderError(0, 'commander.helpDisplayed', '')), 0);
  });

  it('prints errors as `forkbox: <message>` on stderr (or JSON with --json)', () => {
    const err: string[] = [];
    const io = { stdout: { write: () => true }, stderr: { write: (s: string) => err.push(s) } };
    assert.equal(createOutput(false, io).error(new ForkboxError('not_found', 'no sandbox x')), 3);
    assert.equal(err[0], 'forkbox: no sandbox x\n');
    createOutput(true, io).error(new ForkboxError('busy', 'later'));
    assert.deepEqual(JSON.parse(err[1] ?? ''), { error: { code: 'busy', message: 'later' } });
  });

  it('resolves the default state dir', () => {
    assert.equal(defaultStateDir({ env: { FORKBOX_STATE_DIR: '/srv/fb' }, uid: 0 }), '/srv/fb');
    assert.equal(defaultStateDir({ env: {}, uid: 0 }), '/var/lib/forkbox');
    assert.equal(defaultStateDir({ env: { XDG_DATA_HOME: '/x/data' }, uid: 1000 }), '/x/data/forkbox');
    assert.equal(defaultStateDir({ env: {}, uid: 1000, home: '/home/u' }), '/home/u/.local/share/forkbox');
  });

  it('renders tables', () => {
    assert.equal(table(['A', 'BB'], [['xyz', '1']]), 'A    BB\nxyz  1');
  });
});

/** Run the CLI program in-process against the real engine over the fake runtime, capturing output. */
const runCli = (args: string[], api: RecordedApi = createTestEngine().api) => runCliInProcess(args, api);

describe('cli commands (against the real engine over the fake runtime)', () => {
  it('create passes limits, ttl, env and labels', async () => {
    const r = await runCli([
      '--json',
      'create',
      '--memory',
      '2g',
      '--cpus',
      '1.5',
      '--ttl',
      '30m',
      '--env',
      'A=1',
      '--env',
      'B=x=y',
      '--label',
      'team=ml',
      '--name',
      'n1',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.api.calls[0], {
      method: 'createSandbox',
      args: [
        {
          memoryMb: 2048,
          cpus: 1.5,
          env: { A: '1', B: 'x=y' },
          name: 'n1',
          ttlSeconds: 1800,
          labels: { team: 'ml' },
        },
      ],
    });
    assert.equal((JSON.parse(r.stdout) as { name: string }).name, 'n1');
  });

  it('rejects a bad size with exit code 2 and a clear message', async () => {
    const r = await runCli(['create', '--memory', 'lots']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /'lots' is not a size/);
  });

  it('exec passes the words after -- as argv and exits with the command code', async () => {
    const api = createTestEngine().api;
    await api.createSandbox({ name: 'b' });
    await api.mkdir('b', '/w');
    const r = await runCli(
      ['--json', 'exec', '--no-stdin', '--cwd', '/w', 'b', '--', 'sh', '-c', 'exit 5', '--json'],
      api,
    );
    assert.deepEqual(api.calls.at(-1), {
      method: 'exec',
      args: ['b', { argv: ['sh', '-c', 'exit 5', '--json'], cwd: '/w' }],
    });
    assert.equal(r.code, 5);
    const killed = await runCli(
      ['--json', 'exec', '--no-stdin', '--timeout', '1s', 'b', '--', 'sleep', '600'],
      api,
    );
    assert.equal(killed.code, 137, 'killed by signal 9: 128 + 9');
  });

  it('maps an unknown sandbox to exit code 3', async () => {
    const r = await runCli(['inspect', 'ghost']);
    assert.equal(r.code, ERROR_CODES.not_found.exit);
    assert.match(r.stderr, /^forkbox: no sandbox 'ghost'/);
  });

  it('ls prints a table; kill reports each failure', async () => {
    const api = createTestEngine().api;
    const { id } = await api.createSandbox({ name: 'b' });
    const ls = await runCli(['ls'], api);
    assert.match(ls.stdout, /^ID\s+NAME\s+STATE/);
    assert.match(ls.stdout, new RegExp(`${id}\\s+b\\s+running`));
    const k = await runCli(['kill', 'b', 'ghost'], api);
    assert.equal(k.code, 3);
    assert.match(k.stdout, new RegExp(id));
    assert.match(k.stderr, /ghost: no sandbox/);
  });

  it('unknown options are usage errors (exit 2)', async () => {
    const r = await runCli(['ls', '--bogus']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown option/);
  });

  it('eval exits 1 with the traceback on error', async () => {
    const api = createTestEngine().api;
    await api.createSandbox({ name: 'b' });
    const ok = await runCli(['--json', 'eval', 'b', '6*7'], api);
    assert.equal(ok.code, 0);
    assert.equal((JSON.parse(ok.stdout) as { value: string }).value, '42');
    const bad = await runCli(['--json', 'eval', 'b', 'raise'], api);
    assert.equal(bad.code, 1);
  });
});

describe('cli cp (against the real engine over the fake runtime)', () => {
  it('copies a host directory into a sandbox and back out, bytes and modes intact', async () => {
    const { mkdtempSync, mkdirSync, writeFileSync, readFileSync, statSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = mkdtempSync(join(tmpdir(), 'fbx-cp-'));
    try {
      const t = createTestEngine();
      const api = t.api;
      const { id } = await api.createSandbox({ name: 'b' });
      const fileIn = (path: string) => t.runtime.sandboxes.get(id)?.fs.get(path);
      mkdirSync(join(dir, 'src', 'sub'), { recursive: true });
      const bin = Buffer.from([0, 1, 2, 250, 251, 252]);
      writeFileSync(join(dir, 'src', 'a.txt'), 'hello');
      writeFileSync(join(dir, 'src', 'sub', 'b.bin'), bin, { mode: 0o750 });

      const up = await runCli(['cp', join(dir, 'src'), 'b:/work'], api);
      assert.equal(up.code, 0, up.stderr);
      const a = fileIn('/work/a.txt');
      const b = fileIn('/work/sub/b.bin');
      assert.equal(a?.kind === 'file' && a.data.toString(), 'hello');
      assert.equal(b?.kind === 'file' && b.data.equals(bin), true);
      assert.equal(b?.mode, 0o750);

      // Into an existing host directory: lands under the source's base name.
      const down = await runCli(['cp', 'b:/work', join(dir)], api);
      assert.equal(down.code, 0, down.stderr);
      assert.equal(readFileSync(join(dir, 'work', 'a.txt'), 'utf8'), 'hello');
      assert.ok(readFileSync(join(dir, 'work', 'sub', 'b.bin')).equals(bin));
      assert.equal(statSync(join(dir, 'work', 'sub', 'b.bin')).mode & 0o777, 0o750);

      const one = await runCli(['cp', 'b:/work/a.txt', join(dir, 'single.txt')], api);
      assert.equal(one.code, 0, one.stderr);
      assert.equal(readFileSync(join(dir, 'single.txt'), 'utf8'), 'hello');

      const both = await runCli(['cp', join(dir, 'x'), join(dir, 'y')], api);
      assert.equal(both.code, 2);
      assert.match(both.stderr, /exactly one of SRC and DST/);
      const missing = await runCli(['cp', 'b:/nope', join(dir, 'z')], api);
      assert.equal(missing.code, 3);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
