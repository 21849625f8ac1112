"""`exec` requests: start a command through the spawner (spawner.py: posix_spawn, in the exec group the host
placed the spawner in), stream its output within the bounds of outstream.py, feed its stdin, kill it on
timeout or cancel. Exit statuses come from the spawner (which reaps its children) or, if it died, from the
agent's own waitpid loop. Standard library only, Python >= 3.8.
"""

import fcntl
import os
import selectors
import signal
import struct
import termios
import time

import bounds
from outstream import DEFAULT_RATE, STREAMS, OutStream, valid_output_id
from spawner import ERRNO_CODES

DEFAULT_MAX_OUTPUT = bounds.DEFAULT_OUTPUT_BYTES  # per stream
MAX_OUTPUT_LIMIT = bounds.OUTPUT_BYTES
MAX_SPOOL = bounds.SPOOL_BYTES
READ_CHUNK = 64 * 1024
# After the process exits, how long to wait for its pipes to reach EOF: a background child that inherited
# stdout (`server &`) would otherwise hold the exec open forever. Its later output is drained and dropped.
EXIT_GRACE_S = 0.1
LATEST_FLUSH_S = 0.25


_ERRNO_CODES = ERRNO_CODES  # errno -> protocol error code (fileops.py uses it too)

# A pulled image's WorkingDir and User: the default cwd and the user of commands. Read from the template's
# environment once, when the template's agent starts (forked sandboxes inherit them), and not passed on.
DEFAULT_CWD = os.environ.pop("FORKBOX_EXEC_CWD", "") or "/"
EXEC_USER = os.environ.pop("FORKBOX_EXEC_USER", "") or None


class OpError(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


def _int(a, key, default, lo=0, hi=None):
    v = a.get(key)
    if v is None:
        return default
    if not isinstance(v, int) or isinstance(v, bool) or v < lo or (hi is not None and v > hi):
        raise OpError("bad_request", "exec %s must be an integer from %d to %s" % (key, lo, hi if hi else "any"))
    return v


def check_args(a):
    """Validate an exec request; returns a dict of what Exec needs."""
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
    cwd = a.get("cwd") or DEFAULT_CWD
    if not isinstance(cwd, str) or "\0" in cwd:
        raise OpError("bad_request", "exec cwd must be a string without NUL bytes")
    env = a.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise OpError("bad_request", "exec env must be an object of string to string")
    if any("=" in k or "\0" in k or "\0" in v or not k for k, v in env.items()):
        raise OpError("bad_request", "exec env names must be non-empty without '=' and values without NUL")
    mode = a.get("mode") or "head"
    if mode not in ("head", "latest"):
        raise OpError("bad_request", "exec mode must be 'head' or 'latest'")
    output_id = a.get("output_id")
    if output_id is not None and not valid_output_id(output_id):
        raise OpError("bad_request", "exec output_id must be 1-64 letters, digits, '_', '.' or '-', not starting with '.'")
    tag = a.get("tag")
    if tag is not None and (not isinstance(tag, str) or not 0 < len(tag) <= 128):
        raise OpError("bad_request", "exec tag must be a string of 1 to 128 characters")
    tree = a.get("tree")
    if tree is not None and (not isinstance(tree, str) or not 0 < len(tree) <= 128):
        raise OpError("bad_request", "exec tree must be a string of 1 to 128 characters")
    tty = a.get("tty")
    if tty is not None:
        if not isinstance(tty, dict):
            raise OpError("bad_request", "exec tty must be an object with rows and cols")
        tty = check_size(tty)
    return {
        "argv": argv,
        "cwd": os.path.join("/", cwd),  # relative to /, like every path of the protocol
        "env": env,
        "stdin": bool(a.get("stdin")),
        "timeout_ms": _int(a, "timeout_ms", 0),
        "budget": _int(a, "max_output_bytes", DEFAULT_MAX_OUTPUT, 0, MAX_OUTPUT_LIMIT),
        "spool": _int(a, "spool_bytes", 0, 0, MAX_SPOOL),
        "output_id": output_id,
        "mode": mode,
        "rate": _int(a, "rate", DEFAULT_RATE, 1, 1 << 30),
        "tag": tag,
        "tree": tree,
        "tty": tty,
    }


MAX_TTY_SIDE = bounds.TTY_SIDE


def check_size(a):
    """A terminal size: rows and cols, 1 to MAX_TTY_SIDE each."""
    rows, cols = a.get("rows"), a.get("cols")
    for v in (rows, cols):
        if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= MAX_TTY_SIDE:
            raise OpError("bad_request", "a terminal's rows and cols must be integers from 1 to %d" % MAX_TTY_SIDE)
    return (rows, cols)


def set_size(fd, size):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))


class Exec:
    """One running command of one request. `agent` provides sel, add_timer, send_event, send_res,
    send_error, congested, paused, spool_files, spawner, exec_started, exec_done, keep_result."""

    def __init__(self, agent, conn, req_id, args, base_env):
        c = check_args(args)
        self.agent = agent
        self.conn = conn  # None once the host connection that asked for it is gone: output is dropped
        self.id = req_id
        self.tag = c["tag"]
        self.tree = c["tree"]  # the host's name for the command's cgroup, echoed in the result
        self.seq = 0
        self.timed_out = self.cancelled = False
        self.exit_status = None
        self.done = False
        self.failed = False
        self.started = False
        self.paused = False
        self.stdin_queue = []  # [memoryview, eof, req_id, total]
        self.timers = []
        self.flush_timer = None
        self.t0 = time.monotonic()
        env = dict(base_env)
        env.update(c["env"])
        self.streams = {s: OutStream(s, c["budget"], c["spool"], c["output_id"], c["mode"], c["rate"],
                                     agent.spool_files, agent.spool_dir) for s in STREAMS}
        self.pid = None
        self.tty = False
        spec = {"argv": c["argv"], "env": env, "cwd": c["cwd"]}
        if EXEC_USER:
            spec["user"] = EXEC_USER
        if c["tty"] is not None:
            child, mine = self._open_tty(c["tty"], spec)
        else:
            child, mine = self._open_pipes(c["stdin"])
        try:
            agent.spawner.spawn(spec, child, self._on_spawned)
        except OSError as e:
            for fd in mine + child + ((self.stdin_fd,) if self.stdin_fd is not None else ()):
                os.close(fd)
            raise OpError("busy", "cannot start the process that starts commands (%s): the sandbox may be at "
                          "its process limit; end some of its processes and retry" % e.strerror)
        if c["timeout_ms"]:
            self.timers.append(agent.add_timer(c["timeout_ms"] / 1000.0, self._on_timeout))

    def _open_pipes(self, stdin):
        """Pipes for stdin (or /dev/null), stdout and stderr: (the command's ends, our read ends)."""
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        if stdin:
            in_r, self.stdin_fd = os.pipe2(os.O_CLOEXEC)
            os.set_blocking(self.stdin_fd, False)
        else:
            in_r, self.stdin_fd = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC), None
        for fd in (out_r, err_r):
            os.set_blocking(fd, False)
        self.open_fds = {out_r: "stdout", err_r: "stderr"}  # read fd -> stream, read once started
        return (in_r, out_w, err_w), (out_r, err_r)

    def _open_tty(self, size, spec):
        """A pseudo-terminal: the command's stdin, stdout and stderr are its side (the spawner opens it by
        name after setsid, so it is the command's controlling terminal); what it prints comes back as
        stdout, stdin writes are keystrokes, and resize() sets its size."""
        master, slave = os.openpty()  # both close-on-exec
        try:
            set_size(master, size)
            spec["tty"] = os.ttyname(slave)
            os.set_blocking(master, False)
            self.stdin_fd = os.dup(master)
        except OSError:
            os.close(master)
            os.close(slave)
            raise
        self.tty = True
        self.open_fds = {master: "stdout"}
        return (slave, os.dup(slave), os.dup(slave)), (master,)

    def resize(self, size):
        if not self.tty or self.stdin_fd is None or self.done:
            raise OpError("not_found", "exec %s has no terminal (not started with tty, or ended)" % self.id)
        set_size(self.stdin_fd, size)

    def _next_seq(self):
        s = self.seq
        self.seq += 1
        return s

    def _send(self, kind, body=b"", extra=None):
        self.agent.send_event(self.conn, self.id, kind, body=body, extra=extra, seq=self._next_seq())

    # ---- start ----

    def _on_spawned(self, pid, error):
        if self.done:
            return
        if error is not None or not isinstance(pid, int):
            # Could not start: an error answer and no events.
            self.failed = True
            self.done = True
            self._cleanup()
            self.agent.exec_done(self)
            err = error or {}
            self.agent.send_error(self.conn, self.id, str(err.get("code") or "internal"),
                                  str(err.get("message") or "the command could not be started"))
            return
        self.pid = pid
        self.started = True
        self.agent.trees.note(self.tree, pid)
        self.agent.exec_started(self)
        now = time.monotonic()
        for s in self.streams.values():
            s.start_peeks(now)
        self._send("started", extra={"pid": pid})
        for fd in self.open_fds:
            self.agent.sel.register(fd, selectors.EVENT_READ, self._reader(fd))
        if self.timed_out or self.cancelled:  # the deadline or a cancel came first
            self.kill_group(signal.SIGKILL)

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
        if self.done or self.failed:
            return  # a background child still writes after the result: drained and dropped
        s = self.streams[self.open_fds[fd]]
        now = time.monotonic()
        for body, offset in s.feed(data, now):
            self._send(s.stream, body, {"offset": offset})
        p = s.peek(now)
        if p is not None:
            self._send("peek", p, {"stream": s.stream, "total": s.total})
        if s.waiting() and self.flush_timer is None:
            self.flush_timer = self.agent.add_timer(LATEST_FLUSH_S, self._flush_latest)

    def _flush_latest(self):
        self.flush_timer = None
        if self.done:
            return
        now = time.monotonic()
        for s in self.streams.values():
            for body, offset in s.flush(now):
                self._send(s.stream, body, {"offset": offset})
        if any(s.waiting() for s in self.streams.values()):
            self.flush_timer = self.agent.add_timer(LATEST_FLUSH_S, self._flush_latest)

    def _close_fd(self, fd):
        if fd in self.open_fds:
            del self.open_fds[fd]
            if not self.paused and self.started:
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
        """Signal the command's process group. Processes that left it (setsid) are reached by the host,
        which kills the command's cgroup."""
        if self.pid is None:
            return
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
        """Called with the waitpid status of our pid (reaped by the spawner, or by the agent)."""
        self.exit_status = status
        if self.failed:
            return
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

    def _cleanup(self):
        for t in self.timers:
            t.cancel()
        if self.flush_timer is not None:
            self.flush_timer.cancel()
        self._fail_stdin("exec %s has ended" % self.id)
        for fd in list(self.open_fds):
            self._close_fd(fd)

    def _finish(self):
        if self.done:
            return
        self.done = True
        self.resume()  # keep draining (and dropping) whatever a background child still writes
        for t in self.timers:
            t.cancel()
        if self.flush_timer is not None:
            self.flush_timer.cancel()
        self.agent.exec_done(self)
        status = self.exit_status
        result = {
            "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "timed_out": self.timed_out,
            "cancelled": self.cancelled,
            "duration_ms": (time.monotonic() - self.t0) * 1000.0,
            "pid": self.pid,
        }
        omitted = 0
        for s in self.streams.values():
            tail, offset = s.finish()
            if tail:
                self._send(s.stream + "_tail", tail, {"offset": offset})
            result.update(s.result_fields())
            omitted += s.omitted()
            s.close()
        result["truncated"] = omitted > 0
        if self.tag is not None:
            result["tag"] = self.tag
        if self.tree is not None:
            result["tree"] = self.tree
        if self.conn is None or self.conn.closed:
            self.agent.keep_result(self.tag, result)
        else:
            self.agent.send_res(self.conn, self.id, result)

    def close_fds_in_child(self):
        """In a forked child of the agent (the REPL worker, the spawner): drop our copies."""
        fds = list(self.open_fds) + ([self.stdin_fd] if self.stdin_fd is not None else [])
        for s in self.streams.values():
            if s.spool_fd is not None:
                fds.append(s.spool_fd)
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass


__all__ = ["Exec", "OpError", "check_args", "DEFAULT_MAX_OUTPUT", "MAX_OUTPUT_LIMIT"]
