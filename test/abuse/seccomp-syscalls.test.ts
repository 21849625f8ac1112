/**
 * Attack: calling the kernel's riskiest system calls directly (ctypes `syscall(nr, ...)`) — bpf,
 * io_uring, keyrings, userfaultfd, perf_event_open, module loading, kexec, open_by_handle_at (the
 * "shocker" escape), clock setting, swap, reboot, acct, quotactl, syslog, process_vm_readv/writev,
 * fanotify — from an exec and from the REPL, whose worker holds CAP_SYS_ADMIN in the sandbox's user
 * namespace (the most privilege any sandbox code has).
 * Precedent: Docker's default seccomp profile (its blocked list); sandbox-runtime "should prevent
 * privilege escalation attempts" (peers 6b #9); CVE-2014-3519 (open_by_handle_at, "shocker").
 * Contained when: every one fails with ENOSYS — the filter's answer, which on this kernel differs from
 * what the same call returns unfiltered (EINVAL/EFAULT/EPERM/success: checked once on the host by hand;
 * module loading and kexec are compiled out of this kernel, so for them the allow list is checked too).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SECCOMP_ALLOWED } from '../../src/runtimes/native/container/seccomp.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { bothPython, PY_SYSCALL } from '../helpers/attacks.ts';
import { nativeUnavailable, withOneSandbox } from '../helpers/native.ts';

const skip = nativeUnavailable();

/** x86_64 numbers, with harmless arguments (bad pointers, zero lengths, invalid flags). */
const RISKY: Record<string, number[]> = {
  bpf: [321, 0, 0, 0],
  io_uring_setup: [425, 1, 0],
  io_uring_enter: [426, 0, 0, 0, 0, 0, 0],
  io_uring_register: [427, 0, 0, 0, 0],
  keyctl: [250, 0, 0],
  add_key: [248, 0, 0, 0, 0, 0],
  request_key: [249, 0, 0, 0, 0],
  userfaultfd: [323, 0],
  perf_event_open: [298, 0, 0, 0, 0, 0],
  init_module: [175, 0, 0, 0],
  finit_module: [313, -1, 0, 0],
  delete_module: [176, 0, 0],
  kexec_load: [246, 0, 0, 0, 0xffffffff],
  kexec_file_load: [320, -1, -1, 0, 0, 0xffffffff],
  open_by_handle_at: [304, -1, 0, 0],
  name_to_handle_at: [303, -1, 0, 0, 0, 0],
  clock_settime: [227, 0, 0],
  settimeofday: [164, 0, 0],
  adjtimex: [159, 0],
  clock_adjtime: [305, 0, 0],
  swapon: [167, 0, 0],
  swapoff: [168, 0],
  reboot: [169, 0, 0, 0, 0],
  acct: [163, 0],
  quotactl: [179, 0, 0, 0, 0],
  syslog: [103, 10, 0, 0],
  process_vm_readv: [310, 1, 0, 0, 0, 0, 0],
  process_vm_writev: [311, 1, 0, 0, 0, 0, 0],
  fanotify_init: [300, 0, 0],
};

const SCRIPT = `${PY_SYSCALL}
calls = json.loads(sys.argv[1])
out = {name: call(*args) for name, args in calls.items()}
out["getpid (allowed, control)"] = call(39)
out["Seccomp"] = [l.split()[1] for l in open("/proc/self/status") if l.startswith("Seccomp:")][0]
print(json.dumps(out))
`;

describe('abuse: risky system calls under the seccomp filter', { skip: skip ?? false }, () => {
  let api: ForkboxApi;
  let id: string;
  withOneSandbox((s) => {
    ({ api, id } = s);
  });

  it('runs on x86_64 (the syscall numbers below are x86_64’s)', () => {
    assert.equal(process.arch, 'x64', 'this test uses x86_64 system call numbers');
  });

  it('every risky system call fails with ENOSYS, from an exec and from the REPL', async () => {
    const r = await bothPython<Record<string, string>>(api, id, SCRIPT, [JSON.stringify(RISKY)]);
    for (const [where, res] of Object.entries(r)) {
      assert.equal(res.Seccomp, '2', `${where} runs under a seccomp filter`);
      assert.match(res['getpid (allowed, control)'] ?? '', /^ok:\d+$/, `${where}: the harness works`);
      for (const name of Object.keys(RISKY))
        assert.equal(res[name], 'ENOSYS', `${where}: ${name} → ${res[name]} (expected the filter's ENOSYS)`);
    }
  });

  it('none of them is in the allow list the filter is built from', () => {
    const allowed = new Set(SECCOMP_ALLOWED);
    for (const name of Object.keys(RISKY)) assert.ok(!allowed.has(name), `${name} is allowed`);
  });
});
