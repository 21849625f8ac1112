"""Small Linux syscall helpers (ctypes) for the agent. Standard library only, Python >= 3.8."""

import ctypes
import errno
import os
import sys

PR_SET_DUMPABLE = 4
PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_SET_NAME = 15
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38

CAP_NET_ADMIN = 12
CAP_SYS_CHROOT = 18
CAP_SYS_ADMIN = 21

# What user commands must not keep. CAP_SYS_ADMIN: mount/unshare/pivot_root inside the sandbox's user
# namespace (the agent and worker need them to fork; a command with them could remount /.forkbox or build
# its own namespaces to confuse the host). CAP_NET_ADMIN: reconfigure the sandbox's network (routes, the
# slirp tap). CAP_SYS_CHROOT: chroot games that help break out of the mount view.
DROPPED_CAPS = (CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SYS_CHROOT)

# What a sandbox keeps once it is set up (Docker's default set): a new sandbox's PID 1 starts with every
# capability of its own user namespace (it needs CAP_SYS_ADMIN there to mount its root, proc and /dev) and
# cuts its bounding, permitted and effective sets to these before anything of the sandbox runs, so neither
# the agent, the REPL worker nor any command holds CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SYS_CHROOT or
# CAP_SYS_PTRACE. CAP_SETUID/CAP_SETGID: the REPL worker maps its fork children's user namespaces.
SANDBOX_CAPS = (
    0,   # CAP_CHOWN
    1,   # CAP_DAC_OVERRIDE
    3,   # CAP_FOWNER
    4,   # CAP_FSETID
    5,   # CAP_KILL
    6,   # CAP_SETGID
    7,   # CAP_SETUID
    8,   # CAP_SETPCAP
    10,  # CAP_NET_BIND_SERVICE
    13,  # CAP_NET_RAW
    27,  # CAP_MKNOD
    29,  # CAP_AUDIT_WRITE
    31,  # CAP_SETFCAP
)

# An image without python3: the agent runs on the default image's Python, mounted here read-only by the
# host (docs/IMAGES.md). Its worker then never runs user code, and every child needs the mount too.
RUNTIME = "/.forkbox/runtime"
ON_RUNTIME = sys.prefix.startswith(RUNTIME + "/")

_libc = None


def _prctl(option, arg2=0, arg3=0, arg4=0, arg5=0):
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        _libc.prctl.restype = ctypes.c_int
    r = _libc.prctl(option, arg2, arg3, arg4, arg5)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, "prctl(%d): %s" % (option, os.strerror(e)))
    return r


def set_name(name):
    """The process's name as ps and /proc/<pid>/comm show it (at most 15 bytes)."""
    buf = ctypes.create_string_buffer(name.encode("ascii")[:15])
    _prctl(PR_SET_NAME, ctypes.addressof(buf))


def restrict_agent():
    """Run once at agent start-up. Both settings only affect what a later execve() can gain, so the agent
    and the REPL worker (forked, never exec'd) keep the capabilities they need to fork sandboxes, while
    every command they start (exec requests, subprocesses of user code) inherits the restriction.
    Raises OSError when the capabilities cannot be dropped (PR_CAPBSET_DROP needs CAP_SETPCAP)."""
    set_no_new_privs()
    drop_bounding_caps()
    set_not_dumpable()


def set_not_dumpable():
    # Nothing the user runs may ptrace the agent (stop it, read or write its memory, steal its host link):
    # a process that is not dumpable can be traced only with CAP_SYS_PTRACE, which no sandbox process has.
    # Kept across fork (the REPL worker and forked sandboxes' agents inherit it), reset by execve (commands
    # the user runs stay ordinary, debuggable processes).
    _prctl(PR_SET_DUMPABLE, 0)


def set_dumpable(on):
    _prctl(PR_SET_DUMPABLE, 1 if on else 0)


def set_no_new_privs():
    # Without it a setuid binary (or file capabilities) in the image could regain what we drop below.
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


def drop_bounding_caps(caps=DROPPED_CAPS):
    """Drop caps from the bounding set. A cap already absent is fine; failing to drop a present one raises
    (PR_CAPBSET_DROP needs CAP_SETPCAP): running user code with CAP_SYS_ADMIN would be worse than failing."""
    for cap in caps:
        try:
            present = _prctl(PR_CAPBSET_READ, cap) == 1
        except OSError as e:
            if e.errno == errno.EINVAL:  # kernel does not know this cap
                continue
            raise
        if present:
            _prctl(PR_CAPBSET_DROP, cap)


def _last_cap():
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 40


def keep_only_caps(keep=SANDBOX_CAPS):
    """Cut this process's bounding, permitted and effective capability sets to `keep` (inheritable and
    ambient to nothing). Raises OSError when the kernel refuses; a sandbox must not start with more."""
    for cap in range(_last_cap() + 1):
        if cap in keep:
            continue
        try:
            if _prctl(PR_CAPBSET_READ, cap) == 1:
                _prctl(PR_CAPBSET_DROP, cap)
        except OSError as e:
            if e.errno != errno.EINVAL:
                raise
    mask = 0
    for cap in keep:
        mask |= 1 << cap
    _capset(mask, mask, 0)
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)


PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


def _capset(effective, permitted, inheritable):
    global _libc
    if _libc is None:
        _prctl(PR_CAPBSET_READ, 0)  # loads libc
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)(effective & 0xFFFFFFFF, permitted & 0xFFFFFFFF, inheritable & 0xFFFFFFFF,
                                 effective >> 32, permitted >> 32, inheritable >> 32)
    if _libc.capset(header, data) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "capset: %s" % os.strerror(e))


def become_root_of_userns():
    """In a child just cloned into a user namespace of its own (mapped by its parent): become its root
    (uid and gid 0, no supplementary groups). Its host ids are then its block's first."""
    os.setresgid(0, 0, 0)
    os.setgroups([])
    os.setresuid(0, 0, 0)


def set_child_subreaper():
    # When the agent is not PID 1 (tests on the host, or a runtime that wraps it), orphaned grandchildren
    # would be reparented away and escape our reaping and process-group accounting.
    _prctl(PR_SET_CHILD_SUBREAPER, 1)


# The OOM rank of this sandbox's user code (its REPL worker and commands), given by the host in the fork
# request (oom_score_adj): forks rank above the sandboxes they came from. None in a template.
OOM_RANK = None


def apply_oom_rank():
    """Give this process (a new REPL worker or command spawner) the sandbox's OOM rank. The agent may be
    exempt (-1000); user code must never be. Raising needs no privilege."""
    try:
        set_oom_score_adj(0 if OOM_RANK is None else OOM_RANK)
    except OSError:
        pass


def set_oom_score_adj(value, pid="self"):
    fd = os.open("/proc/%s/oom_score_adj" % pid, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, b"%d" % value)
    finally:
        os.close(fd)
