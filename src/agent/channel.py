"""Event-loop plumbing for the agent: timers and a non-blocking framed socket. Standard library only."""

import array
import collections
import heapq
import itertools
import selectors
import socket
import time

from agentlog import AgentLog
from protocol import FrameReader, ProtocolError, encode_header, encode_raw

RECV_CHUNK = 256 * 1024

# The agent's diagnostics: no stdout or stderr of its own (fds 0-2 are /dev/null), so lines go to a
# bounded ring and, while the host is connected, to it as `log` frames (agentlog.py).
AGENT_LOG = AgentLog()


def log(msg, level="info"):
    AGENT_LOG.write(level, msg)


class _WithFds:
    """A queued frame whose first byte carries file descriptors (SCM_RIGHTS); on_sent runs once they left."""

    __slots__ = ("data", "fds", "on_sent")

    def __init__(self, data, fds, on_sent):
        self.data, self.fds, self.on_sent = data, fds, on_sent

    def __len__(self):
        return len(self.data)


class Timer:
    __slots__ = ("deadline", "cb", "cancelled", "seq")

    def __init__(self, deadline, cb, seq):
        self.deadline, self.cb, self.cancelled, self.seq = deadline, cb, False, seq

    def __lt__(self, other):
        return (self.deadline, self.seq) < (other.deadline, other.seq)

    def cancel(self):
        self.cancelled = True


class Loop:
    """A selector whose registered data are callbacks(mask), plus one-shot timers."""

    def __init__(self):
        self.sel = selectors.DefaultSelector()
        self._timers = []
        self._seq = itertools.count()
        self.stopped = False

    def add_timer(self, delay_s, cb):
        t = Timer(time.monotonic() + delay_s, cb, next(self._seq))
        heapq.heappush(self._timers, t)
        return t

    def run_once(self):
        timeout = None
        if self._timers:
            timeout = max(0.0, self._timers[0].deadline - time.monotonic())
        events = self.sel.select(timeout)
        fdmap = self.sel.get_map()
        for key, mask in events:
            # An earlier callback of this batch may have unregistered (and closed) this fd.
            if fdmap.get(key.fd) is not key:
                continue
            self._call(key.data, mask)
        now = time.monotonic()
        while self._timers and self._timers[0].deadline <= now:
            t = heapq.heappop(self._timers)
            if not t.cancelled:
                self._call(t.cb)

    @staticmethod
    def _call(cb, *args):
        try:
            cb(*args)
        except Exception as e:  # one bad request must never take PID 1 down
            import traceback

            log("internal error: %r\n%s" % (e, traceback.format_exc()))


class Channel:
    """One non-blocking stream socket speaking frames. on_frame(ch, header, body); on_close(ch, reason)."""

    def __init__(self, loop, sock, on_frame, on_close, on_drain=None):
        self.loop = loop
        self.sock = sock
        self.reader = FrameReader()
        self.out = collections.deque()
        self.off = 0
        self.pending = 0
        self.closed = False
        self.on_frame, self.on_close, self.on_drain = on_frame, on_close, on_drain
        sock.setblocking(False)
        loop.sel.register(sock, selectors.EVENT_READ, self._on_event)

    def send(self, header, body=b""):
        self.send_raw(encode_header(header), body)

    def send_with_fds(self, header, fds, on_sent):
        """Send one frame with `fds` attached (a Unix socket's peer gets copies); on_sent() runs when they
        are on their way (the caller may then close its own copies), never when the channel closes first."""
        self._queue(_WithFds(encode_raw(encode_header(header)), list(fds), on_sent))

    def send_raw(self, header_bytes, body=b""):
        if len(body) > 65536:
            # Queue a large body as its own buffer instead of copying it into one frame buffer.
            self._queue(encode_raw(header_bytes, body_len=len(body)), body)
        else:
            self._queue(encode_raw(header_bytes, body))

    def _queue(self, *parts):
        if self.closed:
            return
        was_idle = not self.out
        for data in parts:
            self.out.append(data)
            self.pending += len(data)
        if was_idle:
            self._flush()
            if self.out and not self.closed:
                self.loop.sel.modify(self.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, self._on_event)

    def _flush(self):
        while self.out:
            head = self.out[0]
            try:
                if isinstance(head, _WithFds):
                    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", head.fds))]
                    n = self.sock.sendmsg([head.data], anc)
                    self.out[0], on_sent, head = head.data, head.on_sent, head.data  # the fds left with byte 0
                    on_sent()
                else:
                    n = self.sock.send(memoryview(head)[self.off :])
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                self.close("send failed: %s" % e)
                return
            self.off += n
            self.pending -= n
            if self.off == len(head):
                self.out.popleft()
                self.off = 0
            else:
                return

    def _on_event(self, mask):
        if mask & selectors.EVENT_WRITE:
            self._flush()
            if self.closed:
                return
            if not self.out:
                self.loop.sel.modify(self.sock, selectors.EVENT_READ, self._on_event)
            if self.on_drain is not None:
                self.on_drain(self)
        if mask & selectors.EVENT_READ and not self.closed:
            try:
                data = self.sock.recv(RECV_CHUNK)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                self.close("receive failed: %s" % e)
                return
            if not data:
                self.close("peer closed the connection")
                return
            try:
                frames = self.reader.feed(data)
                for header, body in frames:
                    if self.closed:
                        return
                    self.on_frame(self, header, body)
            except ProtocolError as e:
                self.close("protocol error: %s" % e)

    def close(self, reason="closed"):
        if self.closed:
            return
        self.closed = True
        try:
            self.loop.sel.unregister(self.sock)
        except (KeyError, ValueError):
            pass
        try:
            self.sock.close()
        except OSError:
            pass
        self.out.clear()
        self.pending = 0
        if self.on_close is not None:
            self.on_close(self, reason)

    def close_in_child(self):
        """In a forked child: drop our copy of the socket without touching the parent's selector state."""
        self.closed = True
        self.on_close = None
        try:
            self.sock.close()
        except OSError:
            pass
