"""The spawner: one small process per sandbox, forked off the agent once, that starts every `exec` command
with posix_spawn (vfork + exec: ~1 ms; a fork of a Python process costs 10-20 ms on some hosts). Commands
are its children, so each is born in the spawner's cgroup: the host moves the spawner into a fresh exec
group before each command and out of it right after (docs/SECURITY.md, "Kill means the whole tree"). So
every command, and everything it starts (setsid, nohup and double-fork children included), is in a group of
its own that the host can freeze and kill as a whole. Moving a process between cgroup v1 groups waits for an
RCU grace period (~8 ms): the host does it between execs, off their critical path.

Agent <-> spawner: a SOCK_SEQPACKET socketpair.
  agent -> spawner: {"id", "spec"?} with SCM_RIGHTS [stdin, stdout, stderr] (+ a memfd holding the spec JSON
                    when it is larger than SPEC_INLINE bytes: "spec" is then absent)
  spawner -> agent: {"id", "pid"} | {"id", "error": {code, message}} | {"exit": pid, "status": waitpid status}
The spawner reaps its children and reports their exit; if it dies, its children are reparented to the agent
(PID 1, or a child subreaper), which reaps them itself.

Standard library only, Python >= 3.8.
"""

import array
import collections
import ctypes
import errno
import gc
import json
import os
import selectors
import signal
import socket

import cmdfilter
import runas
import sysc

# Reset to the default in the command: exec keeps SIG_IGN, and Python ignores SIGPIPE (`yes | head` needs it).
SIGDEF = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP)
SPEC_INLINE = 32 * 1024
MSG_MAX = SPEC_INLINE + 4096
FDS_MAX = 4

ERRNO_CODES = {
    errno.ENOENT: "not_found",
    errno.EACCES: "permission_denied",
    errno.EPERM: "permission_denied",
    errno.ENOTDIR: "not_a_directory",
    errno.EISDIR: "is_a_directory",
    errno.EEXIST: "exists",
    errno.ENOEXEC: "bad_request",
    errno.E2BIG: "too_large",
}


class SpawnError(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


def resolve(name, path_var):
    """PATH lookup with the command's own PATH (cwd is already the command's)."""
    if "/" in name:
        return name
    for d in path_var.split(":"):
        candidate = os.path.join(d or ".", name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    raise SpawnError("not_found", "command not found: %s (searched PATH=%s)" % (name, path_var))


def _libc_fork():
    try:
        fn = ctypes.PyDLL(None, use_errno=True).fork
    except (AttributeError, OSError):
        return None
    fn.restype = ctypes.c_int
    fn.argtypes = []
    return fn


_FORK = _libc_fork()


def raw_fork():
    """fork(2) without Python's at-fork hooks: in a forked sandbox, PID 1 is a copy of the user's REPL and
    may carry hooks registered by user code (os.register_at_fork), which must never run in the agent or the
    spawner. glibc's own handlers still run; the agent is single-threaded. The cycle collector is off
    across the fork (a collection in the child would write to objects shared with the agent)."""
    was = gc.isenabled()
    gc.disable()
    pid = -1
    try:
        if _FORK is None:
            pid = os.fork()
            return pid
        pid = _FORK()
        if pid < 0:
            err = ctypes.get_errno()
            raise OSError(err, "fork: %s" % os.strerror(err))
        return pid
    finally:
        if was and pid != 0:  # the child keeps it off
            gc.enable()


def _send(sock, obj, fds=()):
    data = json.dumps(obj, separators=(",", ":")).encode("utf-8")
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    return sock.sendmsg([data], anc)


def _recv(sock):
    """One message and the fds that came with it (close-on-exec). (None, []) at EOF."""
    fds = array.array("i")
    data, anc, flags, _ = sock.recvmsg(MSG_MAX, socket.CMSG_LEN(FDS_MAX * fds.itemsize), socket.MSG_CMSG_CLOEXEC)
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    return data, list(fds)


# ---------------------------------------------------------------- agent side


class Spawner:
    """The agent's handle on its spawner. `on_exit(pid, status)` is the agent's reaper callback."""

    def __init__(self, loop, on_exit):
        self.loop = loop
        self.on_exit = on_exit
        self.pid = None
        self.sock = None
        self.next_id = 0
        self.pending = {}  # request id -> callback(pid, error)
        self.out = collections.deque()  # (obj, fds, fds we own) waiting for the socket to take them
        self.writing = False

    def ensure(self):
        """Start the spawner unless it runs; returns its pid. Raises OSError when it cannot fork."""
        if self.pid is not None:
            return self.pid
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            pid = raw_fork()
        except OSError:
            mine.close()
            theirs.close()
            raise
        if pid == 0:
            try:
                sysc.set_name("forkbox-spawner")  # how ps shows it: a part of the sandbox, not a command
                # Every command it starts inherits this: no user namespace of their own (cmdfilter.py).
                cmdfilter.deny_new_userns()
                _spawner_main(theirs)
            finally:
                os._exit(1)
        theirs.close()
        mine.setblocking(False)
        self.pid, self.sock = pid, mine
        self.loop.sel.register(mine, selectors.EVENT_READ, self._on_event)
        return pid

    def spawn(self, spec, fds, callback):
        """Ask for a command; callback(pid, None) once it runs, or callback(None, {code, message}). Takes
        ownership of `fds` (the command's stdin, stdout, stderr): they are closed once handed over."""
        self.ensure()
        self.next_id += 1
        rid = self.next_id
        raw = json.dumps(spec, separators=(",", ":")).encode("utf-8")
        msg = {"id": rid}
        extra = []
        if len(raw) <= SPEC_INLINE:
            msg["spec"] = spec
        else:
            mfd = os.memfd_create("forkbox-spec", os.MFD_CLOEXEC)
            os.write(mfd, raw)  # a memfd takes it all at once
            extra.append(mfd)
        self.pending[rid] = callback
        every = list(fds) + extra
        self.out.append((msg, every, every))  # ours now: closed once sent (or when the spawner dies)
        self._flush()

    def _flush(self):
        while self.out and self.sock is not None:
            msg, fds, own = self.out[0]
            try:
                _send(self.sock, msg, fds)
            except BlockingIOError:
                if not self.writing:
                    self.writing = True
                    self.loop.sel.modify(self.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, self._on_event)
                return
            except OSError:
                self._died()
                return
            self.out.popleft()
            for fd in own:
                os.close(fd)
        if self.sock is not None and self.writing:
            self.writing = False
            self.loop.sel.modify(self.sock, selectors.EVENT_READ, self._on_event)

    def _on_event(self, mask):
        if mask & selectors.EVENT_WRITE:
            self._flush()
        if not mask & selectors.EVENT_READ or self.sock is None:
            return
        while self.sock is not None:
            try:
                data, fds = _recv(self.sock)
            except BlockingIOError:
                return
            except OSError:
                data, fds = None, []
            for fd in fds:  # the spawner never sends fds
                os.close(fd)
            if data is None:
                self._died()
                return
            try:
                m = json.loads(data.decode("utf-8"))
            except ValueError:
                continue
            if "exit" in m:
                self.on_exit(m["exit"], m.get("status", 0))
            else:
                cb = self.pending.pop(m.get("id"), None)
                if cb is not None:
                    cb(m.get("pid"), m.get("error"))

    def _died(self):
        """The spawner is gone (killed with an exec's group, OOM): the next spawn starts another. Its
        children are reparented to the agent, which reaps them; requests in flight fail."""
        if self.sock is not None:
            try:
                self.loop.sel.unregister(self.sock)
            except (KeyError, ValueError):
                pass
            self.sock.close()
        self.sock = None
        self.pid = None
        self.writing = False
        for _, _, own in self.out:
            for fd in own:
                os.close(fd)
        self.out.clear()
        pending, self.pending = self.pending, {}
        for cb in pending.values():
            cb(None, {"code": "stale", "message": "the process that starts commands in this sandbox ended; retry"})

    def reaped(self, pid):
        """The agent reaped `pid`: when it is the spawner, it is gone."""
        if pid == self.pid:
            self._died()

    def close_in_child(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass


# ---------------------------------------------------------------- spawner side


def _spawner_main(sock):
    """In the new spawner: serve spawn requests and report exits until the agent closes the socket."""
    gc.disable()
    try:
        signal.set_wakeup_fd(-1)
    except (ValueError, OSError):
        pass
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    try:
        os.setsid()  # out of the agent's process group: nothing aimed at a command's group reaches it
    except OSError:
        pass
    # Commands inherit this: user code, not the agent (-1000), is what the OOM killer must pick, newest
    # forks first (the sandbox's rank, sysc.OOM_RANK).
    sysc.apply_oom_rank()
    _close_all_but((sock.fileno(),))
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda s, f: None)
    sock.setblocking(True)
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ, "sock")
    sel.register(wake_r, selectors.EVENT_READ, "wake")
    while True:
        for key, _ in sel.select():
            if key.data == "wake":
                try:
                    os.read(wake_r, 4096)
                except OSError:
                    pass
                _reap_children(sock)
            elif not _serve_one(sock):
                os._exit(0)


def _reap_children(sock):
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        try:
            _send(sock, {"exit": pid, "status": status})
        except OSError:
            pass


def _serve_one(sock):
    try:
        data, fds = _recv(sock)
    except OSError:
        return False
    if data is None:
        return False
    rid = None
    try:
        m = json.loads(data.decode("utf-8"))
        rid = m.get("id")
        spec = m.get("spec")
        if spec is None:
            spec = json.loads(_read_memfd(fds[3]).decode("utf-8"))
        pid = _spawn(spec, fds[0], fds[1], fds[2])
        reply = {"id": rid, "pid": pid}
    except SpawnError as e:
        reply = {"id": rid, "error": {"code": e.code, "message": e.message}}
    except OSError as e:
        reply = {"id": rid, "error": {"code": ERRNO_CODES.get(e.errno, "internal"), "message": str(e)}}
    except Exception as e:  # noqa: BLE001 - a bad request must not end the spawner
        reply = {"id": rid, "error": {"code": "internal", "message": "%s: %s" % (type(e).__name__, e)}}
    finally:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
    try:
        _send(sock, reply)
    except OSError:
        return False
    return True


def _read_memfd(fd):
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def _spawn(spec, stdin, stdout, stderr):
    argv, env, cwd = spec["argv"], spec["env"], spec["cwd"]
    try:
        os.chdir(cwd)  # posix_spawn has no chdir action; the spawner is single-threaded
    except OSError as e:
        raise SpawnError(ERRNO_CODES.get(e.errno, "internal"), "cannot use %s as the working directory: %s"
                         % (cwd, e.strerror))
    try:
        path = resolve(argv[0], env.get("PATH", os.defpath))
        actions = [(os.POSIX_SPAWN_DUP2, stdin, 0), (os.POSIX_SPAWN_DUP2, stdout, 1), (os.POSIX_SPAWN_DUP2, stderr, 2)]
        if spec.get("tty"):
            # Opened by name after setsid (posix_spawn's order), the terminal becomes the command's
            # controlling terminal: job control, ^C as SIGINT to its foreground group.
            actions = [(os.POSIX_SPAWN_OPEN, 0, spec["tty"], os.O_RDWR, 0), (os.POSIX_SPAWN_DUP2, 0, 1),
                       (os.POSIX_SPAWN_DUP2, 0, 2)]
        try:
            if spec.get("user"):  # a pulled image's User (runas.py): posix_spawn cannot change the user
                return runas.spawn_as(path, argv, env, (stdin, stdout, stderr), spec["user"], SIGDEF,
                                      tty=bool(spec.get("tty")))
            return os.posix_spawn(path, argv, env, file_actions=actions, setsid=True, setsigdef=SIGDEF,
                                  setsigmask=())
        except runas.RunAsError as e:
            raise SpawnError(e.code, e.message)
        except OSError as e:
            raise SpawnError(ERRNO_CODES.get(e.errno, "internal"), "could not run %s: %s" % (argv[0], e.strerror))
    finally:
        os.chdir("/")


def _close_all_but(keep):
    """Close every fd above 2 but `keep`: the agent's host connection, the worker's channel and the
    commands' pipes must not stay open here (a command would never see EOF on its pipes)."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        names = [str(fd) for fd in range(3, 4096)]
    for name in names:
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
