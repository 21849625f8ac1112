/**
 * Attack: freeze a sandbox's agent so that the daemon waits on it forever. Precedent: issue #11 item 3 —
 * REPL code (CAP_SYS_ADMIN in the sandbox's user namespace) could ptrace-stop the agent (PID 1), and the
 * daemon waited on it without a deadline. Keeping user code away from the agent is the agent's side; this
 * is the daemon's: the agent is frozen from the host (SIGSTOP of its PID 1), the strongest form of it.
 *
 * The agent's side: it is not dumpable (PR_SET_DUMPABLE 0) and no sandbox process has CAP_SYS_PTRACE, so
 * ptrace(PTRACE_ATTACH/SEIZE) of PID 1 fails with EPERM from the REPL and from a command, in a sandbox
 * and in its fork.
 *
 * Contained when: an exec and a file read that wait on the frozen agent both end with a clear error (the
 * read by its deadline, the exec by the liveness watchdog), the sandbox is marked `failed` with the
 * reason and its processes are gone, and other sandboxes keep working.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ForkboxError } from '../../src/domain/errors.ts';
import { type AbuseDaemon, agentPid, running, startDaemon, waitFor } from '../helpers/abuse.ts';
import { sandboxCgroupDirsLeft } from '../helpers/cgroup-files.ts';
import { nativeUnavailable } from '../helpers/native.ts';

const why = nativeUnavailable();

describe('abuse: a frozen agent', () => {
  let d: AbuseDaemon;

  before(async () => {
    if (why) throw new Error(`this abuse test needs the native runtime: ${why}`);
    // Short bounds so the test sees them: quick ops 2 s, nothing from an agent for 3 s = unresponsive.
    d = await startDaemon({
      env: { FORKBOX_AGENT_REQUEST_TIMEOUT_MS: '2000', FORKBOX_AGENT_LIVENESS_MS: '3000' },
    });
  });
  after(async () => {
    await d?.stop();
  });

  it('fails every waiting call clearly, marks the sandbox failed, and keeps serving the others', async () => {
    const frozen = await d.api.createSandbox({});
    const other = await d.api.createSandbox({});
    await d.api.writeFile(frozen.id, '/root/f.txt', Buffer.from('x'));
    const pid1 = agentPid(d.stateDir, frozen.id);

    // A command that would run for ten minutes is waiting on the agent when it is frozen.
    const exec = d.api.exec(frozen.id, { argv: ['sleep', '600'] });
    exec.catch(() => undefined);
    await waitFor('the command started', 30_000, async () =>
      (await d.api.listExecs(frozen.id)).some((e) => e.state === 'running') ? true : undefined,
    );
    process.kill(pid1, 'SIGSTOP');
    const read = d.api.readFile(frozen.id, '/root/f.txt');

    await assert.rejects(read, (e: unknown) => {
      assert.ok(e instanceof ForkboxError, String(e));
      assert.ok(['timeout', 'sandbox_gone'].includes(e.code), `${e.code}: ${e.message}`);
      assert.match(e.message, /within 2000 ms|stopped answering/);
      return true;
    });
    await assert.rejects(exec, (e: unknown) => {
      assert.ok(e instanceof ForkboxError, String(e));
      assert.equal(e.code, 'sandbox_gone', e.message);
      assert.match(e.message, /stopped answering/);
      return true;
    });

    const failed = await waitFor('the sandbox is marked failed', 30_000, async () => {
      const s = await d.api.getSandbox(frozen.id);
      return s.state === 'failed' ? s : undefined;
    });
    assert.match(failed.endReason ?? '', /stopped answering/);
    // Released: its processes and cgroup are gone.
    await waitFor('its PID 1 is gone', 30_000, () => (running(pid1) ? undefined : true));
    await waitFor('its cgroup is removed', 30_000, () =>
      sandboxCgroupDirsLeft(d.stateDir, frozen.id).length > 0 ? undefined : true,
    );
    // The others were served all along.
    assert.equal((await d.api.exec(other.id, { argv: ['echo', 'fine'] })).stdout, 'fine\n');
    const again = await d.api.createSandbox({});
    assert.equal((await d.api.exec(again.id, { argv: ['echo', 'new'] })).stdout, 'new\n');
  });

  it('keeps user code from ptrace-stopping the agent, in the REPL, in a command and in a fork', async () => {
    const sb = await d.api.createSandbox({});
    const attach = [
      'import ctypes, errno',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'out = []',
      'for req in (16, 0x4206):  # PTRACE_ATTACH, PTRACE_SEIZE',
      '    r = libc.ptrace(req, 1, None, None)',
      '    out.append("attached" if r == 0 else errno.errorcode[ctypes.get_errno()])',
      'print(" ".join(out))',
    ].join('\n');
    const inRepl = await d.api.runCode(sb.id, { code: attach });
    assert.equal(inRepl.stdout, 'EPERM EPERM\n', JSON.stringify(inRepl));
    const inExec = await d.api.exec(sb.id, { argv: ['python3', '-c', attach] });
    assert.equal(inExec.stdout, 'EPERM EPERM\n', JSON.stringify(inExec));
    // Its memory is out of reach too.
    const mem = await d.api.exec(sb.id, { argv: ['sh', '-c', 'head -c1 /proc/1/mem 2>&1; echo " rc=$?"'] });
    assert.match(mem.stdout, /Permission denied|Operation not permitted/, mem.stdout);
    const f = await d.api.forkSandbox(sb.id, { n: 1 });
    const childId = f.children[0]?.sandbox?.id;
    assert.ok(f.children[0]?.ok && childId, JSON.stringify(f));
    const inChild = await d.api.runCode(childId, { code: attach });
    assert.equal(inChild.stdout, 'EPERM EPERM\n', JSON.stringify(inChild));
    // And the agent still works as before: commands, the REPL, forks.
    assert.equal((await d.api.exec(childId, { argv: ['echo', 'ok'] })).stdout, 'ok\n');
  });
});
