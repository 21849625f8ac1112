"""`exec` requests: spawn a command (posix_spawn, no subprocess module: the agent reaps every child itself
from one SIGCHLD-driven waitpid loop), stream its output, feed its stdin, kill it on timeout.
Standard library only, Python >= 3.8.
"""

import errno
import os
import selectors
import signal
import time

import sysc

DEFAULT_MAX_OUTPUT = 1 << 20
READ_CHUNK = 64 * 1024
# After the process exits, how long to wait for its pipes to reach EOF: a background child that inherited
# stdout (`server &`) would otherwise hold the exec open forever. Its later output is drained and dropped.
EXIT_GRACE_S = 0.1


class OpError(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


_ERRNO_CODES = {
    errno.ENOENT: "not_found",
    errno.EACCES: "permission_denied",
    errno.EPERM: "permission_denied",
    errno.ENOTDIR: "not_a_directory",
    errno.EISDIR: "is_a_directory",
    errno.EEXIST: "exists",
    errno.ENOEXEC: "bad_request",
    errno.E2BIG: "too_large",
}


def _resolve(name, path_var):
    """PATH lookup with the command's own PATH (posix_spawnp would use the agent's). cwd is already set."""
    if "/" in name:
        return name
    for d in path_var.split(":"):
        candidate = os.path.join(d or ".", name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    raise OpError("not_found", "command not found: %s (searched PATH=%s)" % (name, path_var))


# Reset to the default in the command: exec keeps SIG_IGN, and Python ignores SIGPIPE (`yes | head` needs it).
_SIGDEF = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP)


def _spawn(argv, env, cwd, stdin_fd, out_w, err_w):
    """posix_spawn (vfork + exec: ~1 ms, against ~3 ms for Python's fork + exec), in its own session and
    process group (timeout and cancel kill the whole group; the agent is not in it). no_new_privs and the
    dropped bounding capabilities are inherited from the agent (sysc.restrict_agent at start-up)."""
    try:
        os.chdir(cwd)  # posix_spawn has no chdir action; the agent is single-threaded, so this is safe
    except OSError as e:
        raise OpError(_ERRNO_CODES.get(e.errno, "internal"), "cannot use %s as the working directory: %s"
                      % (cwd, e.strerror))
    try:
        path = _resolve(argv[0], env.get("PATH", os.defpath))
        actions = [(os.POSIX_SPAWN_DUP2, stdin_fd, 0), (os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)]
        try:
            pid = os.posix_spawn(path, argv, env, file_actions=actions, setsid=True, setsigdef=_SIGDEF,
                                 setsigmask=())
        except OSError as e:
            raise OpError(_ERRNO_CODES.get(e.errno, "internal"), "could not run %s: %s" % (argv[0], e.strerror))
    finally:
        os.chdir("/")
    try:
        # The agent runs at -1000: user code must be what the OOM killer picks. (Raising it needs no
        # privilege; the command runs a few microseconds at -1000 before this lands.)
        sysc.set_oom_score_adj(0, pid)
    except OSError:
        pass
    return pid


def _check_args(a):
    argv = a.get("argv")
    cmd = a.get("cmd")
    if (argv is None) == (cmd is None):
        raise OpError("bad_request", "exec needs exactly one of argv (array of strings) or cmd (string)")
    if cmd is not None:
        if not isinstance(cmd, str) or not cmd:
            raise OpError("bad_request", "exec cmd must be a non-empty string")
        argv = ["/bin/sh", "-c", cmd]
    elif not isinstance(argv, list) or not argv or not all(isinstance(x, str) for x in argv):
        raise OpError("bad_request", "exec argv must be a non-empty array of strings")
    if any("\0" in x for x in argv):
        raise OpError("bad_request", "exec argv must not contain NUL bytes")
    cwd = a.get("cwd") or "/"
    if not isinstance(cwd, str) or "\0" in cwd:
        raise OpError("bad_request", "exec cwd must be a string without NUL bytes")
    cwd = os.path.join("/", cwd)  # relative to /, like every path of the protocol
    env = a.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise OpError("bad_request", "exec env must be an object of string to string")
    if any("=" in k or "\0" in k or "\0" in v or not k for k, v in env.items()):
        raise OpError("bad_request", "exec env names must be non-empty without '=' and values without NUL")
    timeout = a.get("timeout_ms") or 0
    cap = a.get("max_output_bytes")
    cap = DEFAULT_MAX_OUTPUT if cap is None else cap
    for name, v in (("timeout_ms", timeout), ("max_output_bytes", cap)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise OpError("bad_request", "exec %s must be a non-negative integer" % name)
    return argv, cwd, env, timeout, cap, bool(a.get("stdin"))


class Exec:
    """One running command of one request. `agent` provides sel, add_timer, send_event, send_res."""

    def __init__(self, agent, conn, req_id, args, base_env):
        argv, cwd, env_over, timeout_ms, cap, want_stdin = _check_args(args)
        self.agent = agent
        self.conn = conn  # None once the host connection that asked for it is gone: output is dropped
        self.id = req_id
        self.cap = cap
        self.forwarded = 0
        self.seq = 0
        self.truncated = self.timed_out = self.cancelled = False
        self.exit_status = None
        self.done = False
        self.open_fds = {}  # read fd -> "stdout" | "stderr"
        self.paused = False
        self.stdin_fd = None
        self.stdin_queue = []  # [memoryview, eof, req_id, total]
        self.timers = []
        env = dict(base_env)
        env.update(env_over)
        self.t0 = time.monotonic()

        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        in_r, in_w = os.pipe() if want_stdin else (os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC), None)
        try:
            pid = _spawn(argv, env, cwd, in_r, out_w, err_w)
        except BaseException:
            for fd in (out_r, in_w):
                if fd is not None:
                    os.close(fd)
            os.close(err_r)
            raise
        finally:
            for fd in (out_w, err_w, in_r):
                os.close(fd)
        self.pid = pid
        for fd, kind in ((out_r, "stdout"), (err_r, "stderr")):
            os.set_blocking(fd, False)
            self.open_fds[fd] = kind
            agent.sel.register(fd, selectors.EVENT_READ, self._reader(fd))
        if in_w is not None:
            os.set_blocking(in_w, False)
            self.stdin_fd = in_w
        agent.send_event(conn, req_id, "started", extra={"pid": pid}, seq=self._next_seq())
        if timeout_ms:
            self.timers.append(agent.add_timer(timeout_ms / 1000.0, self._on_timeout))

    def _next_seq(self):
        s = self.seq
        self.seq += 1
        return s

    # ---- output ----

    def _reader(self, fd):
        return lambda mask: self._on_readable(fd)

    def _on_readable(self, fd):
        if self.conn is not None and not self.done and self.agent.congested(self.conn):
            self.pause()
            return
        try:
            data = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._close_fd(fd)
            self._maybe_finish()
            return
        if self.done or self.conn is None or self.forwarded >= self.cap:
            if self.forwarded >= self.cap:
                self.truncated = True
            return
        room = self.cap - self.forwarded
        if len(data) > room:
            data = data[:room]
            self.truncated = True
        self.forwarded += len(data)
        self.agent.send_event(self.conn, self.id, self.open_fds[fd], body=data, seq=self._next_seq())

    def _close_fd(self, fd):
        if fd in self.open_fds:
            del self.open_fds[fd]
            if not self.paused:
                self.agent.sel.unregister(fd)
            os.close(fd)

    def pause(self):
        """The host connection's send buffer is full: stop reading until it drains (backpressure)."""
        if not self.paused:
            self.paused = True
            for fd in self.open_fds:
                self.agent.sel.unregister(fd)
            self.agent.paused.add(self)

    def resume(self):
        if self.paused:
            self.paused = False
            for fd in self.open_fds:
                self.agent.sel.register(fd, selectors.EVENT_READ, self._reader(fd))

    # ---- stdin ----

    def write_stdin(self, req_id, data, eof):
        if self.stdin_fd is None or self.done:
            raise OpError("not_found", "exec %s has no open stdin (not started with stdin: true, closed, or ended)"
                          % self.id)
        was_empty = not self.stdin_queue
        self.stdin_queue.append([memoryview(data), bool(eof), req_id, len(data)])
        if was_empty:
            self._flush_stdin()

    def _flush_stdin(self):
        while self.stdin_queue:
            item = self.stdin_queue[0]
            try:
                while len(item[0]):
                    n = os.write(self.stdin_fd, item[0])
                    item[0] = item[0][n:]
            except BlockingIOError:
                self.agent.sel.register(self.stdin_fd, selectors.EVENT_WRITE, lambda m: self._on_stdin_writable())
                return
            except OSError as e:
                self._fail_stdin("stdin of exec %s is closed: %s" % (self.id, e.strerror))
                return
            self.stdin_queue.pop(0)
            self.agent.send_res(self.conn, item[2], {"written": item[3]})
            if item[1]:
                self._close_stdin()
                self._fail_stdin("stdin of exec %s was closed by an earlier eof" % self.id)
                return

    def _on_stdin_writable(self):
        self.agent.sel.unregister(self.stdin_fd)
        self._flush_stdin()

    def _fail_stdin(self, message):
        for item in self.stdin_queue:
            self.agent.send_error(self.conn, item[2], "not_found", message)
        self.stdin_queue = []
        self._close_stdin()

    def _close_stdin(self):
        if self.stdin_fd is not None:
            try:
                self.agent.sel.unregister(self.stdin_fd)
            except (KeyError, ValueError):
                pass
            os.close(self.stdin_fd)
            self.stdin_fd = None

    # ---- ending ----

    def kill_group(self, sig):
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _on_timeout(self):
        if self.exit_status is None:
            self.timed_out = True
            self.kill_group(signal.SIGKILL)

    def cancel(self):
        if self.exit_status is None and not self.done:
            self.cancelled = True
            self.kill_group(signal.SIGKILL)

    def on_exit(self, status):
        """Called by the agent's reaper with the waitpid status of our pid."""
        self.exit_status = status
        self._fail_stdin("exec %s has ended" % self.id)
        if self.open_fds:
            self.timers.append(self.agent.add_timer(EXIT_GRACE_S, self._grace_over))
        self._maybe_finish()

    def _grace_over(self):
        if self.paused:  # output is still waiting in the pipes for the host to catch up: not over yet
            self.timers.append(self.agent.add_timer(EXIT_GRACE_S, self._grace_over))
        else:
            self._finish()

    def _maybe_finish(self):
        if self.exit_status is not None and not self.open_fds:
            self._finish()

    def _finish(self):
        if self.done:
            return
        self.done = True
        self.resume()  # keep draining (and dropping) whatever a background child still writes
        for t in self.timers:
            t.cancel()
        self.agent.exec_done(self)
        status = self.exit_status
        exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        self.agent.send_res(self.conn, self.id, {
            "exit_code": exit_code,
            "signal": sig,
            "timed_out": self.timed_out,
            "cancelled": self.cancelled,
            "truncated": self.truncated,
            "duration_ms": (time.monotonic() - self.t0) * 1000.0,
            "pid": self.pid,
        })
