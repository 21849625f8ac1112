"""The output of one repl.eval, read by the agent (docs/AGENT-PROTOCOL.md, "Output of exec and repl.eval").
Standard library only, Python >= 3.8.

For each eval the agent makes two pipes, passes their write ends to the worker (SCM_RIGHTS), which puts
them on fds 1 and 2 for the duration of the eval, and reads the read ends in its own event loop: the
worker stays single-threaded (it may fork at any time between evals), and output that a background
process keeps writing after the eval is drained and dropped here, never blocking or killing it.
Memory is bounded per stream by outstream.OutStream whatever the code prints.
"""

import collections
import os
import selectors
import time

from outstream import SPOOL_DIR, OutStream, valid_output_id

READ_CHUNK = 64 * 1024
# After the worker answered: how long to wait for EOF. A background process that inherited the pipes
# (`subprocess.Popen(...)` left running) would otherwise hold the eval open for ever.
EOF_GRACE_S = 0.1
MAX_LINGERING = 8  # pipes of finished evals still drained because a background process holds them
STREAMS = ("stdout", "stderr")
SHARED_DRAIN_MAX = 1 << 20


def read_some(fd):
    """One read of a non-blocking pipe: bytes, b"" at its end (or on an error), None when nothing is there."""
    try:
        return os.read(fd, READ_CHUNK)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError:
        return b""


class EvalOutput:
    """Pipes and captures of one eval. `agent` provides sel, add_timer, send_event, congested, paused."""

    def __init__(self, agent, conn, rid, max_output_bytes, output_id, spool_bytes, shared=None):
        """`shared`: {read fd: stream} of pipes that outlive the eval (the Node REPL's stdout and stderr,
        noderepl.py) instead of two new pipes: read while the eval runs, drained (bounded) when it answers,
        never closed here."""
        self.agent, self.conn, self.rid = agent, conn, rid
        self.shared = shared is not None
        spool = valid_output_id(output_id) and spool_bytes > 0
        self.caps = {
            s: OutStream(s, max_output_bytes, spool_bytes if spool else 0, output_id if spool else None,
                         open_files=getattr(agent, "spool_files", None),
                         spool_dir=getattr(agent, "spool_dir", None) or SPOOL_DIR)
            for s in STREAMS
        }
        self.seq = 0
        self.fds = {}  # read end -> stream
        self.worker_fds = []
        self.registered = False
        self.finished = False
        self._done = None
        self._timer = None
        if self.shared:
            self.fds = dict(shared)
            self._register()
            return
        try:
            for s in STREAMS:
                r, w = os.pipe2(os.O_CLOEXEC)
                self.fds[r] = s
                self.worker_fds.append(w)
                os.set_blocking(r, False)
        except OSError:
            self.close()
            raise
        self._register()

    def release_worker_fds(self):
        """Close the agent's copies of the write ends (once passed to the worker, or on failure)."""
        for w in self.worker_fds:
            try:
                os.close(w)
            except OSError:
                pass
        self.worker_fds = []

    # ---- reading ----

    def _register(self):
        if not self.registered:
            for fd in self.fds:
                self.agent.sel.register(fd, selectors.EVENT_READ, lambda mask, fd=fd: self._on_readable(fd))
            self.registered = True

    def _unregister(self):
        if self.registered:
            for fd in self.fds:
                try:
                    self.agent.sel.unregister(fd)
                except (KeyError, ValueError):
                    pass
            self.registered = False

    def resume(self):
        """The host connection drained (or closed): read again."""
        if self.fds and not self.registered:
            self._register()

    def _on_readable(self, fd):
        data = read_some(fd)
        if data is None:
            return
        if not data:
            self._close_fd(fd)
            if not self.fds and self._done is not None and not self.finished:
                self._complete()
            return
        if self.finished:
            return  # a background process still writes after the eval: drained and dropped
        self._take(fd, data)
        conn = self.conn
        if conn is not None and not conn.closed and self.agent.congested(conn):
            # Stop reading until the host catches up: the code then blocks in write().
            self._unregister()
            self.agent.paused.add(self)

    def _take(self, fd, data):
        stream = self.fds[fd]
        cap = self.caps[stream]
        now = time.monotonic()
        for head, _offset in cap.feed(data, now):
            self._event(stream, head)
        peek = cap.peek(now)
        if peek is not None:
            self._event("peek", peek, {"stream": stream, "total": cap.total})

    def _drain_shared(self):
        """What the process wrote before it answered is in the pipes: read it now, at most one pipe's worth
        past that per stream (a background writer must not keep the answer waiting)."""
        for fd in list(self.fds):
            left = SHARED_DRAIN_MAX
            while left > 0 and fd in self.fds:
                try:
                    data = os.read(fd, min(READ_CHUNK, left))
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    data = b""
                if not data:
                    self._close_fd(fd)
                    break
                left -= len(data)
                self._take(fd, data)

    def _event(self, kind, body, extra=None):
        self.agent.send_event(self.conn, self.rid, kind, body, extra, self.seq)
        self.seq += 1

    def _close_fd(self, fd):
        if fd in self.fds:
            if self.registered:
                try:
                    self.agent.sel.unregister(fd)
                except (KeyError, ValueError):
                    pass
            del self.fds[fd]
            if self.shared:
                return  # the pipe's owner closes it
            try:
                os.close(fd)
            except OSError:
                pass

    # ---- the end ----

    def finish(self, done):
        """The worker answered (or died): once both pipes reach EOF, or EOF_GRACE_S later, send the tails and
        call done(fields) with the result fields (`<stream>_total`, `_file`, `_spooled`, `truncated`)."""
        self._done = done
        if self.shared:
            self._drain_shared()
            self._complete()
        elif not self.fds:
            self._complete()
        else:
            self._timer = self.agent.add_timer(EOF_GRACE_S, self._on_grace)

    def _on_grace(self):
        self._timer = None
        if self.finished:
            return
        if not self.registered and self.fds:
            # Paused for backpressure: what the code wrote before answering is still in the pipes.
            self._timer = self.agent.add_timer(EOF_GRACE_S, self._on_grace)
            return
        self._complete()

    def _complete(self):
        if self.finished:
            return
        self.finished = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        fields = {}
        truncated = False
        for s in STREAMS:
            cap = self.caps[s]
            tail, _offset = cap.finish()
            if tail:
                self._event(s + "_tail", tail)
            truncated = truncated or cap.omitted() > 0
            fields.update(cap.result_fields())
            cap.close()
        fields["truncated"] = truncated
        self.caps = {}
        self.agent.paused.discard(self)
        if self.shared:
            self._unregister()
            self.fds = {}  # the pipes stay open: their owner reads them between evals
        elif self.fds:
            self._register()  # drain and drop until EOF; lingering is bounded by Lingering
            self.agent.repl.lingering.add(self)
        done, self._done = self._done, None
        done(fields)

    def close(self):
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.agent.paused.discard(self)
        for cap in self.caps.values():
            cap.close()
        for fd in list(self.fds):
            self._close_fd(fd)
        self.release_worker_fds()


class Lingering:
    """Finished evals whose pipes a background process still holds: drained until EOF, at most
    MAX_LINGERING of them (the oldest is closed; its writer then gets EPIPE)."""

    def __init__(self):
        self._outs = collections.deque()

    def add(self, out):
        self._outs = collections.deque(o for o in self._outs if o.fds)
        self._outs.append(out)
        while len(self._outs) > MAX_LINGERING:
            self._outs.popleft().close()

    def close_all(self):
        for o in self._outs:
            o.close()
        self._outs.clear()
