"""A second seccomp filter, stacked on the sandbox's own for every command (docs/SECURITY.md).

The sandbox's profile lets a process make a user namespace: the REPL worker clones each fork child into one
of its own. Commands (exec requests, the Node REPL, the browser, an image's entrypoint) never need one, and a
fresh user namespace re-grants a full capability set over new namespaces — the entry point of many kernel
exploits. So the command spawner and the Node REPL's process install this filter before they exec anything:
clone(2) and unshare(2) with CLONE_NEWUSER fail with EPERM (clone3 already fails with ENOSYS, so libc falls
back to clone). Filters only ever add restrictions, and a process cannot remove one: everything a command
starts inherits it. Standard library only, Python >= 3.8.
"""

import ctypes
import errno
import os

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
CLONE_NEWUSER = 0x10000000

# (audit arch, clone, unshare) per machine
_ARCH = {
    "x86_64": (0xC000003E, 56, 272),
    "aarch64": (0xC00000B7, 220, 97),
}

_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000


class _Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Insn))]


def program(machine=None):
    """The filter as (code, jt, jf, k) instructions over struct seccomp_data (nr at 0, arch at 4, the low
    32 bits of args[0] at 16 on little-endian machines)."""
    arch, clone, unshare = _ARCH[machine or os.uname().machine]
    return [
        (_LD_W_ABS, 0, 0, 4),  # 0: arch
        (_JEQ_K, 0, 6, arch),  # 1: another ABI: the sandbox's own filter refuses it -> 8
        (_LD_W_ABS, 0, 0, 0),  # 2: nr
        (_JEQ_K, 1, 0, clone),  # 3: clone -> 5
        (_JEQ_K, 0, 3, unshare),  # 4: neither -> 8
        (_LD_W_ABS, 0, 0, 16),  # 5: flags
        (_JSET_K, 0, 1, CLONE_NEWUSER),  # 6: no CLONE_NEWUSER -> 8
        (_RET_K, 0, 0, _RET_ERRNO | errno.EPERM),  # 7
        (_RET_K, 0, 0, _RET_ALLOW),  # 8
    ]


def deny_new_userns():
    """Install the filter on this process (no_new_privs is already set). Raises OSError when it cannot:
    a command must then not run."""
    insns = program()
    arr = (_Insn * len(insns))(*[_Insn(*i) for i in insns])
    prog = _Prog(len(insns), ctypes.cast(arr, ctypes.POINTER(_Insn)))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "seccomp filter for commands: %s" % os.strerror(e))
