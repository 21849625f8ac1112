/**
 * The Runtime port's contract, as one suite run against every runtime (the way hono runs one suite
 * against every adapter): test/unit/runtime-contract-fake.test.ts runs it over the in-memory fake,
 * test/integration/runtime-contract-native.test.ts over the native runtime (root, runc, cgroups). What
 * the service layer relies on is written here once; a runtime passes only if it behaves so.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ForkboxError } from '../../src/domain/errors.ts';
import { NETWORK_NONE } from '../../src/domain/network.ts';
import { DEFAULT_LIMITS, type SandboxRecord } from '../../src/domain/types.ts';
import type { ExecOutputChunk, ExecSpec, Runtime, SandboxHandle } from '../../src/service/ports.ts';

export interface ContractSubject {
  runtime: Runtime;
  /** An image the runtime can create sandboxes of. */
  image: string;
  close(): Promise<void>;
}

const newId = () => `sb-${randomBytes(5).toString('hex')}`;

function recordOf(
  h: SandboxHandle,
  spec: {
    name: string;
    image: string;
    env: Record<string, string>;
    parentId?: string | null;
    depth?: number;
  },
): SandboxRecord {
  const t = Date.now();
  return {
    id: h.id,
    name: spec.name,
    state: 'running',
    image: spec.image,
    templateId: typeof h.runtime.templateId === 'string' ? h.runtime.templateId : '',
    parentId: spec.parentId ?? null,
    depth: typeof h.runtime.depth === 'number' ? h.runtime.depth : (spec.depth ?? 0),
    limits: DEFAULT_LIMITS,
    env: spec.env,
    labels: {},
    expiresAt: null,
    createdAt: t,
    updatedAt: t,
    hostPid: h.hostPid,
    runtime: h.runtime,
    endReason: null,
    network: NETWORK_NONE,
    tenant: 'default',
    namespace: 'default',
    session: null,
  };
}

async function rejectsWith(p: Promise<unknown>, code: string): Promise<ForkboxError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ForkboxError, `expected a ForkboxError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    return e;
  }
  assert.fail(`expected an error with code ${code}`);
}

export function runtimeContract(name: string, open: () => Promise<ContractSubject>): void {
  describe(`Runtime contract: ${name}`, () => {
    let subject: ContractSubject;
    let rt: Runtime;
    const made: SandboxRecord[] = [];

    async function create(env: Record<string, string> = {}): Promise<SandboxRecord> {
      const id = newId();
      const h = await rt.createSandbox({
        id,
        name: id,
        group: 'default',
        image: subject.image,
        limits: DEFAULT_LIMITS,
        env,
        prewarm: [],
      });
      assert.equal(h.id, id);
      const rec = recordOf(h, { name: id, image: subject.image, env });
      made.push(rec);
      return rec;
    }
    async function fork(src: SandboxRecord, n: number) {
      const specs = Array.from({ length: n }, (_, i) => {
        const id = newId();
        return { id, name: id, env: src.env, limits: src.limits, forkIndex: i };
      });
      const out = await rt.forkSandbox(src, specs);
      const kids = out.children.map((c) => {
        assert.ok(c.ok, c.ok ? '' : c.error);
        const rec = recordOf(c.handle, { name: c.id, image: src.image, env: src.env, parentId: src.id });
        made.push(rec);
        return rec;
      });
      return { out, kids };
    }
    const run = (rec: SandboxRecord, spec: ExecSpec) => rt.exec(rec, spec).result;
    /** The runtime says it cannot do `what` (its capabilities' `unsupported`). */
    const cannot = (what: string) => rt.capabilities.unsupported?.some((u) => u.startsWith(what)) === true;
    const sh = async (rec: SandboxRecord, cmd: string) => (await run(rec, { cmd })).stdout.toString();
    const text = async (rec: SandboxRecord, path: string) => (await rt.readFile(rec, path)).data.toString();

    before(async () => {
      subject = await open();
      rt = subject.runtime;
    });
    after(async () => {
      // Children first: a parent's PID 1 holds its descendants' pid namespace.
      for (const r of made.reverse()) await rt.killSandbox(r).catch(() => undefined);
      await subject?.close();
    });

    it('creates a sandbox that runs commands', async () => {
      const sb = await create();
      assert.ok(sb.hostPid !== null && sb.hostPid > 0);
      const r = await run(sb, { argv: ['echo', 'hello'] });
      assert.equal(r.stdout.toString(), 'hello\n');
      assert.equal(r.exitCode, 0);
      assert.equal(r.signal, null);
      assert.equal(r.timedOut, false);
      assert.equal(r.cancelled, false);
      assert.equal(r.truncated, false);
    });

    it('exec: argv and shell forms, exit status, stderr, environment and cwd', async () => {
      const sb = await create({ FROM_CREATE: 'made' });
      const r = await run(sb, { cmd: 'echo out; echo err >&2; exit 3' });
      assert.equal(r.stdout.toString(), 'out\n');
      assert.equal(r.stderr.toString(), 'err\n');
      assert.equal(r.exitCode, 3);
      assert.equal(
        (await run(sb, { argv: ['printenv', 'GREETING'], env: { GREETING: 'hi' } })).stdout.toString(),
        'hi\n',
      );
      assert.equal((await run(sb, { argv: ['printenv', 'FROM_CREATE'] })).stdout.toString(), 'made\n');
      assert.equal(
        (await run(sb, { argv: ['printenv', 'FORKBOX_SANDBOX_ID'] })).stdout.toString(),
        `${sb.id}\n`,
      );
      assert.equal((await run(sb, { argv: ['pwd'], cwd: '/tmp' })).stdout.toString(), '/tmp\n');
      await rejectsWith(run(sb, { argv: ['no-such-program-xyz'] }), 'not_found');
      assert.equal((await run(sb, { cmd: 'no-such-program-xyz' })).exitCode, 127);
    });

    it('exec: output arrives as numbered chunks, in order, the same bytes as the result', async () => {
      const sb = await create();
      const chunks: ExecOutputChunk[] = [];
      let pid = 0;
      const h = rt.exec(
        sb,
        { cmd: 'echo a; echo b >&2; echo c' },
        { onOutput: (c) => chunks.push(c), onStarted: (p) => (pid = p) },
      );
      const r = await h.result;
      assert.ok(pid > 0, 'onStarted gives the process id');
      const seqs = chunks.map((c) => c.seq);
      assert.deepEqual(
        seqs,
        [...seqs].sort((a, b) => a - b),
      );
      assert.equal(new Set(seqs).size, seqs.length, 'no two chunks share a seq');
      const joined = (s: 'stdout' | 'stderr') =>
        Buffer.concat(chunks.filter((c) => c.stream === s).map((c) => c.data)).toString();
      assert.equal(joined('stdout'), r.stdout.toString());
      assert.equal(joined('stderr'), r.stderr.toString());
      assert.equal(r.stdout.toString(), 'a\nc\n');
    });

    it('exec: stdin is fed in order and closed by eof', async () => {
      const sb = await create();
      const h = rt.exec(sb, { argv: ['cat'], stdin: true });
      await h.writeStdin(Buffer.from('abc'), false);
      await h.writeStdin(Buffer.from('def\n'), true);
      const r = await h.result;
      assert.equal(r.stdout.toString(), 'abcdef\n');
      assert.equal(r.exitCode, 0);
    });

    it('exec: a timeout ends the command and the result says so', async () => {
      const sb = await create();
      const r = await run(sb, { argv: ['sleep', '600'], timeoutMs: 200 });
      assert.equal(r.timedOut, true);
      assert.equal(r.exitCode, null);
      assert.equal(r.cancelled, false);
    });

    it('exec: cancel ends the command and the result says so', async () => {
      const sb = await create();
      let h!: ReturnType<Runtime['exec']>;
      h = rt.exec(sb, { argv: ['sleep', '600'] }, { onStarted: () => h.cancel() });
      const r = await h.result;
      assert.equal(r.cancelled, true);
      assert.equal(r.exitCode, null);
      assert.equal(r.timedOut, false);
    });

    it('exec: output past max_output_bytes is cut and marked truncated', async () => {
      const sb = await create();
      const r = await run(sb, { argv: ['seq', '1', '20000'], maxOutputBytes: 1000 });
      assert.equal(r.truncated, true);
      assert.ok(r.stdout.toString().startsWith('1\n2\n3\n'));
      assert.ok(r.stdout.length + r.stderr.length < 20_000, `${r.stdout.length} bytes kept`);
      assert.equal(r.exitCode, 0);
    });

    it('files: write, read (whole and a range), stat, list, move, delete', async () => {
      const sb = await create();
      const bin = Buffer.from([0, 1, 2, 255, 254, 10]);
      assert.equal(
        (await rt.writeFile(sb, '/work/sub/data.bin', bin, { createDirs: true, mode: 0o600 })).size,
        6,
      );
      assert.deepEqual((await rt.readFile(sb, '/work/sub/data.bin')).data, bin);
      const part = await rt.readFile(sb, '/work/sub/data.bin', { offset: 2, length: 2 });
      assert.deepEqual(part.data, Buffer.from([2, 255]));
      assert.equal(part.size, 6);
      const st = await rt.statFile(sb, '/work/sub/data.bin');
      assert.equal(st.type, 'file');
      assert.equal(st.size, 6);
      assert.equal(st.mode, 0o600);
      assert.equal((await rt.statFile(sb, '/work/sub')).type, 'dir');
      await rt.mkdir(sb, '/work/a/b', { parents: true });
      const ls = await rt.listFiles(sb, '/work');
      assert.deepEqual(ls.entries.map((e) => `${e.name}:${e.type}`).sort(), ['a:dir', 'sub:dir']);
      assert.equal(ls.truncated, false);
      const deep = await rt.listFiles(sb, '/work', { recursive: true });
      assert.ok(deep.entries.some((e) => e.path === '/work/sub/data.bin'));
      await rt.writeFile(sb, '/work/other.txt', Buffer.from('x'));
      await rejectsWith(rt.moveFile(sb, '/work/other.txt', '/work/sub/data.bin'), 'already_exists');
      await rt.moveFile(sb, '/work/other.txt', '/work/sub/data.bin', { overwrite: true });
      assert.equal(await text(sb, '/work/sub/data.bin'), 'x');
      await rejectsWith(rt.deleteFile(sb, '/work/sub'), 'invalid_argument');
      await rt.deleteFile(sb, '/work', { recursive: true });
      await rejectsWith(rt.statFile(sb, '/work'), 'not_found');
    });

    it('files: ETags, if_match checked with the write, append and offset in place', async () => {
      const sb = await create();
      const w = await rt.writeFile(sb, '/tmp/e.txt', Buffer.from('abc'));
      assert.match(w.etag, /^fb-[0-9a-f]{32}$/);
      assert.equal((await rt.readFile(sb, '/tmp/e.txt', { offset: 1, length: 1 })).etag, w.etag);
      assert.equal((await rt.statFile(sb, '/tmp/e.txt')).etag, w.etag);
      const w2 = await rt.writeFile(sb, '/tmp/e.txt', Buffer.from('xyz'), { ifMatch: w.etag });
      assert.notEqual(w2.etag, w.etag, 'a rewrite with the same size changes the ETag');
      await rejectsWith(rt.writeFile(sb, '/tmp/e.txt', Buffer.from('lost'), { ifMatch: w.etag }), 'conflict');
      await rejectsWith(rt.writeFile(sb, '/tmp/none', Buffer.from('x'), { ifMatch: w.etag }), 'conflict');
      const a = await rt.writeFile(sb, '/tmp/e.txt', Buffer.from('12'), { append: true, ifMatch: w2.etag });
      assert.equal(a.size, 5);
      assert.equal((await rt.writeFile(sb, '/tmp/e.txt', Buffer.from('Y'), { offset: 1 })).size, 5);
      assert.equal(await text(sb, '/tmp/e.txt'), 'xYz12');
      await rejectsWith(rt.writeFile(sb, '/tmp/e.txt', Buffer.from('!'), { offset: 9 }), 'invalid_argument');
      const sparse = await rt.readFile(sb, '/tmp/e.txt', { offset: 0, length: 64, sparse: true });
      assert.deepEqual([sparse.extents, sparse.end, sparse.data.toString()], [[[0, 5]], 5, 'xYz12']);
    });

    it('files: clear errors for a missing file, a directory read, a missing parent', async () => {
      const sb = await create();
      await rejectsWith(rt.readFile(sb, '/no/such/file'), 'not_found');
      await rejectsWith(rt.readFile(sb, '/etc'), 'invalid_argument');
      await rejectsWith(rt.writeFile(sb, '/no/such/dir/f', Buffer.from('x')), 'not_found');
      await rejectsWith(rt.listFiles(sb, '/etc/hostname'), 'invalid_argument');
    });

    it('files and commands see the same filesystem', async () => {
      const sb = await create();
      await rt.writeFile(sb, '/tmp/from-api', Buffer.from('api\n'));
      assert.equal(await sh(sb, 'cat /tmp/from-api'), 'api\n');
      await run(sb, { cmd: 'echo cmd > /tmp/from-cmd' });
      assert.equal(await text(sb, '/tmp/from-cmd'), 'cmd\n');
    });

    it('repl: the namespace persists, errors are results, a restart clears it', async () => {
      const sb = await create();
      assert.equal((await rt.replEval(sb, 'x = 41', {})).ok, true);
      const v = await rt.replEval(sb, 'x + 1', {});
      assert.equal(v.ok, true);
      assert.equal(v.value, '42');
      assert.equal((await rt.replEval(sb, "print('hi')", {})).stdout, 'hi\n');
      const e = await rt.replEval(sb, "raise ValueError('boom')", {});
      assert.equal(e.ok, false);
      assert.equal(e.error?.type, 'ValueError');
      assert.equal(e.error?.message, 'boom');
      assert.equal((await rt.replEval(sb, 'x', {})).value, '41', 'an error keeps the namespace');
      await rt.replRestart(sb);
      const gone = await rt.replEval(sb, 'x', {});
      assert.equal(gone.ok, false);
      assert.equal(gone.error?.type, 'NameError');
    });

    it('repl: a timeout interrupts the code and keeps the namespace', async () => {
      const sb = await create();
      await rt.replEval(sb, 'kept = 5', {});
      const r = await rt.replEval(sb, 'while True:\n    pass', { timeoutMs: 300 });
      assert.equal(r.ok, false);
      assert.equal(r.timedOut, true);
      assert.equal(r.interrupted, true);
      assert.equal(r.error?.type, 'KeyboardInterrupt');
      assert.equal((await rt.replEval(sb, 'kept', {})).value, '5');
    });

    it('fork: children start from the files and REPL of one instant, then go their own ways', async () => {
      const src = await create();
      await rt.writeFile(src, '/tmp/shared', Buffer.from('v1'));
      await rt.replEval(src, 'v = 7', {});
      const { out, kids } = await fork(src, 2);
      const [a, b] = kids as [SandboxRecord, SandboxRecord];
      assert.equal(out.children.length, 2);
      assert.equal(out.pythonState, rt.capabilities.forkProcessState);
      assert.ok(out.driver.length > 0);
      for (const [i, k] of kids.entries()) {
        assert.equal(await text(k, '/tmp/shared'), 'v1');
        assert.equal(await sh(k, 'printenv FORKBOX_FORK_INDEX'), `${i}\n`);
        assert.equal(await sh(k, 'printenv FORKBOX_PARENT_ID'), `${src.id}\n`);
        if (rt.capabilities.forkProcessState) assert.equal((await rt.replEval(k, 'v', {})).value, '7');
      }
      await rt.writeFile(a, '/tmp/shared', Buffer.from('a'));
      await rt.writeFile(src, '/tmp/after', Buffer.from('src'));
      await rt.replEval(a, 'v = 8', {});
      assert.equal(await text(src, '/tmp/shared'), 'v1', 'a child writes its own copy');
      assert.equal(await text(b, '/tmp/shared'), 'v1', 'siblings do not share writes');
      await rejectsWith(rt.readFile(b, '/tmp/after'), 'not_found');
      if (rt.capabilities.forkProcessState) assert.equal((await rt.replEval(b, 'v', {})).value, '7');
      assert.equal((await rt.replEval(src, 'v', {})).value, '7');
    });

    it('diffLayers: what two forks changed, against the layer they share', async () => {
      if (cannot('diff')) {
        // A runtime without diffs says so, naming itself.
        const src = await create();
        assert.throws(
          () => rt.layerChain(src),
          (e: unknown) =>
            e instanceof ForkboxError && e.code === 'invalid_argument' && e.message.includes(rt.name),
        );
        return;
      }
      const src = await create();
      await rt.writeFile(src, '/tmp/base.txt', Buffer.from('base\n'));
      const { kids } = await fork(src, 2);
      const [a, b] = kids as [SandboxRecord, SandboxRecord];
      await rt.writeFile(a, '/tmp/only-a', Buffer.from('a'));
      await rt.writeFile(b, '/tmp/only-b', Buffer.from('b'));
      await rt.writeFile(b, '/tmp/base.txt', Buffer.from('BASE\n'));
      const ca = rt.layerChain(a);
      const cb = rt.layerChain(b);
      assert.ok(ca.lowers.length > 0);
      const d = await rt.diffLayers(ca, cb, { paths: ['/tmp'], unifiedFor: '/tmp/base.txt' });
      assert.notEqual(d.base, null, 'two forks of one source share the layer it froze');
      assert.deepEqual(
        d.added.map((e) => e.path),
        ['/tmp/only-b'],
      );
      assert.deepEqual(
        d.removed.map((e) => e.path),
        ['/tmp/only-a'],
      );
      assert.deepEqual(
        d.modified.map((e) => e.path),
        ['/tmp/base.txt'],
      );
      assert.ok(d.modified[0]?.changes?.includes('content'));
      assert.match(d.unified ?? '', /-base\n\+BASE/);
      assert.equal(d.truncated, false);
    });

    it('kill: a killed sandbox answers no more; keepInit keeps a parent for its children', async () => {
      const parent = await create();
      const { kids } = await fork(parent, 1);
      const child = kids[0] as SandboxRecord;
      await rt.killSandbox(parent, { keepInit: true });
      assert.equal(await sh(child, 'echo alive'), 'alive\n', 'the child outlives its tombstoned parent');
      await rejectsWith(run(parent, { argv: ['true'] }), 'conflict');
      await rt.killSandbox(child);
      await rejectsWith(run(child, { argv: ['true'] }), 'conflict');
      await rt.killSandbox(parent);
      await rejectsWith(rt.readFile(parent, '/etc/hostname'), 'conflict');
    });

    it('pause and resume: a paused sandbox keeps its state and runs again after resume', async () => {
      const sb = await create();
      await rt.replEval(sb, 'p = 1', {});
      await rt.pauseSandbox(sb);
      await rt.resumeSandbox(sb);
      assert.equal(await sh(sb, 'echo back'), 'back\n');
      assert.equal((await rt.replEval(sb, 'p', {})).value, '1');
    });

    it('usage: memory, processes and the disk its writes take', async () => {
      const sb = await create();
      await rt.replEval(sb, 'u = 1', {});
      const before = await rt.usage(sb);
      assert.ok(before.memoryBytes > 0);
      assert.ok(before.pids >= 2, `agent and REPL: ${before.pids}`);
      await rt.writeFile(sb, '/tmp/100k', Buffer.alloc(100 * 1024, 1));
      const after = await rt.usage(sb);
      if (!cannot('disk'))
        assert.ok(
          after.diskBytes >= before.diskBytes + 100 * 1024,
          `${before.diskBytes} → ${after.diskBytes}`,
        );
      else assert.ok(after.memoryBytes > 0, 'writes held in memory (no disk count)');
      assert.equal(after.oomKills, 0);
    });

    it('recover: a sandbox whose processes are gone is reported lost', async () => {
      const sb = await create();
      await rt.killSandbox(sb);
      made.splice(made.indexOf(sb), 1);
      const { lost } = await rt.recover([sb], [], 2000);
      assert.deepEqual(lost, [sb.id]);
    });
  });
}
