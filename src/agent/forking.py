"""Forking a REPL worker into new sandboxes (docs/ARCHITECTURE.md, "Fork": the steps inside the source).

Runs in the REPL worker of a template or a sandbox. For each child the host has already mounted the
child's root filesystem at ``spec["root"]`` and its inbox at ``spec["inbox"]`` (both seen here through
the rslave ``/.forkbox/inbox`` mount). For each child:

    clone(new user + pid namespace) -> [parent] write the child's uid/gid maps (``spec["userns"]``: a
        template's child gets a block of host ids of its own, a fork's child its source's) -> [child = PID 1
        of the new pid ns] become root of its user namespace -> greet the host on the child's control
        socket (the host moves it into the new sandbox's cgroups and welcomes it)
        -> unshare(mnt, net, uts, ipc) -> mounts (inbox, agent code, fresh /dev, proc, sys) -> pivot_root
        -> cut capabilities to the sandbox's set -> reopen open files -> hostname, lo up, reseed RNGs,
        env -> become_child(spec, socket)

A child has every capability of its new user namespace until its set-up is done, and no capability in any
other: the worker that clones it needs none beyond CAP_SETUID/CAP_SETGID (for the maps), so the REPL code
it runs never holds CAP_SYS_ADMIN anywhere (docs/SECURITY.md). A child without ``spec["userns"]`` (an old
host) is cloned into its parent's user namespace, as before.

The child then answers the host's readiness ping on that connection (or reports its set-up error
there): the worker returns as soon as every child is cloned. A worker with threads takes the older
two-step path instead (fork -> unshare -> fork, see `_start_one`).
Everything is standard library (ctypes for the syscalls Python 3.11 lacks).
"""

import ctypes
import errno
import fcntl
import gc
import os
import random
import socket
import stat
import struct
import sys

import sysc

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MS_SLAVE = 1 << 19
MNT_DETACH = 0x2

NEW_NAMESPACES = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC
# What a child unshares for itself once it runs. Only the pid namespace has to come with the clone (a
# process cannot change its own); the others cost most of a clone (a network namespace ~0.8 ms, a copy of
# the mount table more), so each child makes its own, in parallel, instead of the forking worker making
# them all one after another.
OWN_NAMESPACES = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC
CLONE_NEWUSER = 0x10000000
CLONE_PARENT = 0x00008000
SIGCHLD = 17

_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
# clone(2) with no new stack is fork(2) with flags; with ptid, ctid and tls all 0 the two orders of its
# last arguments (x86_64: ptid, ctid, tls; aarch64: ptid, tls, ctid) do not matter.
_SYS_CLONE = {"x86_64": 56, "aarch64": 220}

# Device nodes a fresh /dev gets, bound from this sandbox's /dev (never the whole parent /dev: siblings
# would then share /dev/shm, terminals and mqueues).
TMPFS_MIN_BYTES, TMPFS_MAX_BYTES = 1 << 20, 64 << 20
_DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")

_libc = ctypes.CDLL(None, use_errno=True)


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def _b(s):
    return None if s is None else s.encode()


def unshare(flags):
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def mount(source, target, fstype, flags, data=None):
    _check(
        _libc.mount(_b(source), _b(target), _b(fstype), ctypes.c_ulong(flags), _b(data)),
        "mount %s on %s" % (fstype or source, target),
    )


def umount2(target, flags):
    _check(_libc.umount2(_b(target), ctypes.c_int(flags)), "umount %s" % target)


def pivot_root(new_root, put_old):
    nr = _SYS_PIVOT_ROOT.get(os.uname().machine)
    if nr is None:
        raise OSError(errno.ENOSYS, "pivot_root: unsupported machine %s" % os.uname().machine)
    _check(_libc.syscall(ctypes.c_long(nr), _b(new_root), _b(put_old)), "pivot_root")


def _gil_syscall():
    """syscall(2) called with the GIL held (a PyDLL function), so that a child made by clone(2) wakes up
    holding it, as after os.fork(). None where this Python or machine does not allow it."""
    nr = _SYS_CLONE.get(os.uname().machine)
    if nr is None:
        return None
    try:
        fn = ctypes.PyDLL(None, use_errno=True).syscall
        api = ctypes.pythonapi
        hooks = (api.PyOS_BeforeFork, api.PyOS_AfterFork_Child, api.PyOS_AfterFork_Parent)
    except (AttributeError, OSError):
        return None
    fn.restype = ctypes.c_long
    for h in hooks:
        h.restype = None
        h.argtypes = []
    return nr, fn, hooks


_CLONE = _gil_syscall()


def can_clone_into_namespaces():
    """Whether `clone_into_namespaces` is safe here: it needs a single-threaded process. glibc's fork()
    makes malloc and stdio locks consistent in the child; a bare clone(2) does not, so a lock another
    thread held at that instant would stay held in the child forever."""
    if _CLONE is None:
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def clone_into_namespaces(flags):
    """fork() straight into new namespaces: returns 0 in the child (PID 1 of its new pid namespace when
    `flags` has CLONE_NEWPID), the child's pid in the parent. One copy of this process instead of the
    two (and an exit) of fork -> unshare -> fork: the copy is most of the cost of a fork of a large
    REPL. The child is a child of our parent (CLONE_PARENT), which reaps it: the agent, exactly where
    the two-step path's grandchild ends up once its middle process exits. Python's own fork hooks run as
    in os.fork(); glibc's do not (see can_clone_into_namespaces)."""
    nr, fn, (before, after_child, after_parent) = _CLONE
    before()
    pid = fn(ctypes.c_long(nr), ctypes.c_long(flags | CLONE_PARENT | SIGCHLD), ctypes.c_long(0),
             ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0))
    if pid == 0:
        after_child()
        return 0
    err = ctypes.get_errno()
    after_parent()
    if pid < 0:
        raise OSError(err, "clone: %s" % os.strerror(err))
    return pid


def userns_maps(spec):
    """(uid_map, gid_map) the host gave for this child's own user namespace, or None (an old host)."""
    u = spec.get("userns")
    if not isinstance(u, dict):
        return None
    uid_map, gid_map = u.get("uid_map"), u.get("gid_map")
    if not (isinstance(uid_map, str) and isinstance(gid_map, str)):
        return None
    return uid_map, gid_map


def write_maps(pid, maps):
    """Map a new child's user namespace (we hold CAP_SETUID/CAP_SETGID in ours, its parent)."""
    uid_map, gid_map = maps
    for name, text in (("uid_map", uid_map), ("gid_map", gid_map)):
        fd = os.open("/proc/%d/%s" % (pid, name), os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)


def sethostname(name):
    raw = name.encode()[:64]
    _check(_libc.sethostname(raw, ctypes.c_size_t(len(raw))), "sethostname")


def loopback_up():
    """Bring `lo` up in the fresh network namespace (ioctl: no iproute2 needed in the image)."""
    SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def open_regular_files(skip_fds=()):
    """What this process has open past fds 0-2, read before pivoting: ([(fd, path, flags, pos)], [fd]).

    A forked fd still points at the source's object. Files, directories and devices opened by path are
    reopened by that path in the child's own root (writes through the old fd would land in the source,
    and a directory fd would let the child openat() into the source's tree). Everything else (pipes,
    sockets, memfds, eventfds and other anonymous inodes, deleted files) would be a channel between two
    sandboxes: the child gets /dev/null on those fd numbers instead (the second list).
    """
    found, cut = [], []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd in skip_fds or fd <= 2:
            continue
        try:
            path = os.readlink("/proc/self/fd/%d" % fd)
            mode = os.fstat(fd).st_mode
        except OSError:
            continue  # the fd of the listdir itself, closed by now
        by_path = path.startswith("/") and not path.endswith(" (deleted)") and not path.startswith("/memfd:")
        if not by_path or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISCHR(mode)):
            cut.append(fd)
            continue
        flags, pos = None, 0
        try:
            with open("/proc/self/fdinfo/%d" % fd) as f:
                for line in f:
                    if line.startswith("flags:"):
                        flags = int(line.split()[1], 8)
                    elif line.startswith("pos:"):
                        pos = int(line.split()[1])
        except OSError:
            pass
        if flags is None:
            cut.append(fd)
        else:
            found.append((fd, path, flags, pos))
    return found, cut


def _reopen(carried):
    files, cut = carried
    strip = os.O_CREAT | os.O_TRUNC | os.O_EXCL
    for fd, path, flags, pos in files:
        try:
            nfd = os.open(path, flags & ~strip)
            if pos:
                os.lseek(nfd, pos, os.SEEK_SET)
            os.dup2(nfd, fd, inheritable=not flags & os.O_CLOEXEC)
            os.close(nfd)
        except OSError:
            cut.append(fd)  # gone in the child's root: never leave it pointing into the source
    null = os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
    try:
        for fd in cut:
            if fd != null:
                os.dup2(null, fd, inheritable=False)
    finally:
        if null not in cut:
            os.close(null)


def tmpfs_size(spec):
    """Bytes for each of the child's /dev and /dev/shm (the host derives it from the memory limit)."""
    n = spec.get("tmpfs_bytes")
    if not isinstance(n, int) or isinstance(n, bool):
        return TMPFS_MAX_BYTES
    return min(TMPFS_MAX_BYTES, max(TMPFS_MIN_BYTES, n))


def _fresh_dev(newroot, size):
    dev = newroot + "/dev"
    os.makedirs(dev, exist_ok=True)
    mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=%d" % size)
    for node in _DEV_NODES:
        target = dev + "/" + node
        with open(target, "w"):
            pass
        mount("/dev/" + node, target, None, MS_BIND)
    for d in ("pts", "shm", "mqueue"):
        os.mkdir(dev + "/" + d)
    # A new devpts instance: the child's terminals are its own, not its parent's or siblings'.
    mount("devpts", dev + "/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620,gid=5")
    os.symlink("pts/ptmx", dev + "/ptmx")
    mount("shm", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=%d" % size)
    try:
        mount("mqueue", dev + "/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        pass  # mqueue is optional; POSIX message queues then fail inside the child
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, dev + "/" + name)


def _setup_child(spec, cwd, files):
    newroot = spec["root"]
    # Nothing this child mounts may propagate back to its parent; mounts from the host (its inbox)
    # must still propagate in, so slave, not private.
    mount(None, "/", None, MS_REC | MS_SLAVE)
    # In a user namespace of its own, every mount copied from the parent is locked, and pivot_root refuses
    # a locked new root: bind the root onto itself (with the project mount under it), which is ours.
    mount(newroot, newroot, None, MS_BIND | MS_REC)
    # The child needs the runtime at the same path: modules it imports later are read from there.
    binds = ("/.forkbox/bin", sysc.RUNTIME) if sysc.ON_RUNTIME else ("/.forkbox/bin",)
    for d in ("/.forkbox/inbox", "/proc", "/sys") + binds:
        os.makedirs(newroot + d, exist_ok=True)
    # The child's inbox: a bind of a slave stays a slave, so the host's later mounts for *its*
    # children reach it and it can fork in turn.
    mount(spec["inbox"], newroot + "/.forkbox/inbox", None, MS_BIND)
    # The agent's code, and (an image without python3) the Python it runs on, read-only.
    for d in binds:
        mount(d, newroot + d, None, MS_BIND)
        mount(None, newroot + d, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    _fresh_dev(newroot, tmpfs_size(spec))
    # proc before pivoting: the kernel refuses a new proc in a user namespace unless a fully visible
    # proc is already mounted (mnt_already_visible). We are PID 1 of the new pid ns, so it shows ours.
    mount("proc", newroot + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    try:
        mount("sysfs", newroot + "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        pass  # /sys stays empty; nothing forkbox needs reads it
    # Private, so the host's lazy unmount of <inbox>/<child> does not propagate into our root.
    mount(None, newroot, None, MS_PRIVATE)
    os.chdir(newroot)
    pivot_root(".", ".")
    umount2(".", MNT_DETACH)
    try:
        os.chdir(cwd)
    except OSError:
        os.chdir("/")
    _reopen(files)
    sethostname(spec.get("hostname") or spec["sandbox_id"])
    loopback_up()
    # Parallel attempts must not draw the same numbers.
    random.seed()
    np = sys.modules.get("numpy")
    if np is not None:
        try:
            np.random.seed()
        except Exception:
            pass
    env = spec.get("env") or {}
    for k, v in env.items():
        os.environ[str(k)] = str(v)
    os.environ["FORKBOX_SANDBOX_ID"] = spec["sandbox_id"]
    os.environ["FORKBOX_FORK_INDEX"] = str(spec.get("fork_index", 0))
    if spec.get("parent_id"):
        os.environ["FORKBOX_PARENT_ID"] = spec["parent_id"]
    else:
        os.environ.pop("FORKBOX_PARENT_ID", None)


def _write(fd, data):
    try:
        os.write(fd, data)
    except OSError:
        pass


def _await_maps(go):
    """In a child of its own user namespace: wait until the parent has written its maps (a byte on `go`;
    end of file means it could not), then become its root. Unmapped, it must never go on."""
    if go is None:
        return
    try:
        ok = os.read(go, 1) == b"x"
        os.close(go)
        if not ok:
            os._exit(1)
        sysc.become_root_of_userns()
        sysc.set_not_dumpable()  # cloned while its parent was dumpable (fork_children): never from here on
    except BaseException:
        os._exit(1)


def _child(spec, skip_fds, become_child, greet, unshare_flags=0, go=None):
    """In the new sandbox's PID 1: become root of its user namespace, greet the host (it moves us into the
    sandbox's cgroups), set up, become the sandbox's agent. Never returns. From the greeting on the host
    hears from us directly: after the set-up the agent answers the host's readiness ping, or `failed`
    answers it with the error."""
    _await_maps(go)
    # What this child has open, read here rather than in the source: another thread of the source may open
    # and close files while the children are cloned, and a list read before would name fds that are gone
    # (reopening one over the host connection's fd number killed the child).
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = "/"
    files = open_regular_files(skip_fds)
    try:
        host_sock, failed = greet(spec)
    except BaseException:
        # Refused or unreachable: the host reports the refusal (or its wait for our hello times out).
        os._exit(1)
    try:
        if unshare_flags:
            unshare(unshare_flags)
        _setup_child(spec, cwd, files)
        if go is not None:
            # Set up: from here on nothing of the sandbox holds CAP_SYS_ADMIN & co (sysc.SANDBOX_CAPS).
            sysc.keep_only_caps()
    except BaseException as e:  # report, never fall back into the parent's code
        failed("set-up failed inside the new sandbox: %s" % (e,))
        os._exit(1)
    try:
        become_child(spec, host_sock, failed)
    finally:
        os._exit(1)


def _start_one(spec, skip_fds, become_child, greet, one_step):
    """Start one child and return its pid (in our pid namespace); raises OSError when it could not start.

    One step (`clone_into_namespaces`): the child is PID 1 of a new pid namespace at once, a child of our
    parent, and makes its other namespaces itself. Two steps (a worker with threads): fork -> [middle]
    unshare -> fork -> [grandchild = PID 1]; the middle reports the grandchild's pid on a pipe and exits.
    With ``spec["userns"]`` the child gets a user namespace of its own, which we map before it goes on.
    """
    maps = userns_maps(spec)
    go_r, go_w = os.pipe() if maps else (None, None)
    try:
        pid = _clone_one(spec, skip_fds, become_child, greet, one_step, maps, go_r, go_w)
        if maps:
            try:
                write_maps(pid, maps)
            except OSError:
                os.close(go_w)  # end of file: the child exits unmapped (the host's unborn watch sees it)
                go_w = None
                if _alive(pid):
                    raise
                # It died first (an at-fork hook of the source's, a signal): the host reports that death,
                # with its cause, as for any child that dies before it greets.
                return pid
            os.write(go_w, b"x")
        return pid
    finally:
        for fd in (go_r, go_w):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass


def _alive(pid):
    """Whether process `pid` still runs (not gone, not a zombie)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _clone_one(spec, skip_fds, become_child, greet, one_step, maps, go_r, go_w):
    userns = CLONE_NEWUSER if maps else 0
    if one_step:
        pid = clone_into_namespaces(CLONE_NEWPID | userns)
        if pid == 0:
            if go_w is not None:
                os.close(go_w)
            _child(spec, skip_fds, become_child, greet, OWN_NAMESPACES, go_r)
        return pid
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        raise
    if pid == 0:
        os.close(r)
        if go_w is not None:
            os.close(go_w)
        code = 1
        try:
            unshare(NEW_NAMESPACES | userns)
            gpid = os.fork()
            if gpid == 0:
                os.close(w)
                _child(spec, skip_fds, become_child, greet, 0, go_r)
            _write(w, ("P%d\n" % gpid).encode())
            code = 0
        except BaseException as e:
            _write(w, ("E%s\n" % e).encode()[:2000])
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 4096)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    for line in b"".join(chunks).decode(errors="replace").splitlines():
        if line.startswith("P"):
            return int(line[1:])
        if line.startswith("E"):
            raise OSError(errno.EPERM, line[1:])
    raise OSError(errno.ECHILD, "the forking middle process ended without a report")


def fork_children(children, become_child, greet, skip_fds=()):
    """Fork this process into one new sandbox per spec. Returns one result per child, in order: whether
    it started, and its pid. Its set-up it reports to the host itself (see `_child`), so the children of a
    fork set themselves up while later ones are still being cloned, and this returns once all are cloned.

    greet(spec) -> (socket, failed) runs first thing in each child (agent.greet_host); become_child(spec,
    socket) turns the child into its sandbox's agent.
    """
    # Objects allocated so far stop being touched by the GC, so children share more pages.
    gc.freeze()
    sys.stdout.flush()
    sys.stderr.flush()
    # Dumpable while it clones: the /proc files of a child of a process that is not are owned by the root
    # of the user namespace the process was exec'd in (the template's), which we cannot write its maps as.
    # Each child makes itself not dumpable again once mapped (_await_maps).
    mapped = any(userns_maps(spec) for spec in children)
    try:
        if mapped:
            sysc.set_dumpable(True)
        one_step = can_clone_into_namespaces()
        results = []
        for spec in children:
            try:
                pid = _start_one(spec, skip_fds, become_child, greet, one_step)
                results.append({"sandbox_id": spec["sandbox_id"], "ok": True, "pid": pid})
            except OSError as e:
                results.append({"sandbox_id": spec["sandbox_id"], "ok": False, "error": "fork failed: %s" % e})
        return results
    finally:
        if mapped:
            sysc.set_dumpable(False)
        # Only the children need the frozen generation (shared pages); the source collects as before.
        gc.unfreeze()
