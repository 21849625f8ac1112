/**
 * The seccomp profile of every native template (and so of every sandbox forked from it: a filter is
 * inherited across fork and cannot be removed).
 *
 * Shape: allow by default, then deny the syscalls that widen the kernel's attack surface most and that
 * no sandboxed workload needs. (DESIGN.md 2.1 asks for a Docker-default-style allow list; this deny
 * list is the first step — see docs/SECURITY.md for the gap.) `unshare`, `mount`, `umount2`,
 * `pivot_root` and `setns` stay allowed: the REPL worker needs them to fork sandboxes, and they act only
 * on namespaces owned by the sandbox's user namespace.
 */

const EPERM = 1;
const ENOSYS = 38;
const EAFNOSUPPORT = 97;
const AF_NETLINK = 16;
const NETLINK_NETFILTER = 12;
const CLONE_NEWUSER = 0x10000000;

type Arg = { index: number; value: number; valueTwo?: number; op: string };
type Rule = { names: string[]; action: string; errnoRet?: number; args?: Arg[]; comment?: string };

const DENIED: Rule[] = [
  {
    // io_uring: a large, frequently exploited kernel surface; bypasses seccomp for the ops it submits.
    names: ['io_uring_setup', 'io_uring_enter', 'io_uring_register'],
    action: 'SCMP_ACT_ERRNO',
    errnoRet: EPERM,
  },
  {
    // eBPF, kernel keyrings, userfaultfd (used to win kernel races), perf events (side channels, bugs).
    names: ['bpf', 'keyctl', 'add_key', 'request_key', 'userfaultfd', 'perf_event_open'],
    action: 'SCMP_ACT_ERRNO',
    errnoRet: EPERM,
  },
  {
    // Host-wide state a container must never touch (most need init-namespace caps anyway: belt and braces).
    names: [
      'kexec_load',
      'kexec_file_load',
      'init_module',
      'finit_module',
      'delete_module',
      'open_by_handle_at',
      'name_to_handle_at',
      'acct',
      'swapon',
      'swapoff',
      'reboot',
      'settimeofday',
      'clock_settime',
      'clock_adjtime',
      'adjtimex',
      'quotactl',
      'lookup_dcookie',
      'uselib',
      'syslog',
      'fanotify_init',
      'vhangup',
    ],
    action: 'SCMP_ACT_ERRNO',
    errnoRet: EPERM,
  },
  {
    // Netfilter over netlink (nf_tables has a long CVE history): socket(AF_NETLINK, *, NETLINK_NETFILTER).
    names: ['socket'],
    action: 'SCMP_ACT_ERRNO',
    errnoRet: EAFNOSUPPORT,
    args: [
      { index: 0, value: AF_NETLINK, op: 'SCMP_CMP_EQ' },
      { index: 2, value: NETLINK_NETFILTER, op: 'SCMP_CMP_EQ' },
    ],
  },
  {
    // No nested user namespaces: they re-grant a full capability set over new namespaces and are the
    // entry point of many kernel exploits. Forking needs new mount/pid/net/uts/ipc namespaces only.
    names: ['unshare'],
    action: 'SCMP_ACT_ERRNO',
    errnoRet: EPERM,
    args: [{ index: 0, value: CLONE_NEWUSER, valueTwo: CLONE_NEWUSER, op: 'SCMP_CMP_MASKED_EQ' }],
  },
  {
    names: ['clone'],
    action: 'SCMP_ACT_ERRNO',
    errnoRet: EPERM,
    args: [{ index: 0, value: CLONE_NEWUSER, valueTwo: CLONE_NEWUSER, op: 'SCMP_CMP_MASKED_EQ' }],
  },
  {
    // clone3 passes its flags in memory, which seccomp cannot inspect: answer ENOSYS so libc falls back
    // to clone(2), whose flags the rule above checks (what Docker does too).
    names: ['clone3'],
    action: 'SCMP_ACT_ERRNO',
    errnoRet: ENOSYS,
  },
];

export function seccompProfile(): Record<string, unknown> {
  return {
    defaultAction: 'SCMP_ACT_ALLOW',
    architectures: ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32', 'SCMP_ARCH_AARCH64'],
    syscalls: DENIED.map(({ comment: _c, ...r }) => r),
  };
}
