"""Bounded capture of one output stream (docs/AGENT-PROTOCOL.md, "Output of exec and repl.eval").
Standard library only, Python >= 3.8.

Pure bookkeeping, no event loop: feed() the bytes as they are read and forward what it returns (the head);
past the head only a ring of the last tail-part bytes is kept in memory, everything is counted, and the
whole stream goes to a spool file inside the sandbox, up to a cap. Memory per stream is bounded by the
inline budget (held head + ring), whatever the program writes.
"""

import os
import stat
import time

import bounds

TAIL_MAX = bounds.TAIL_BYTES
PEEK_BYTES = 2048
PEEK_EVERY_S = 2.0
SPOOL_DIR = "/tmp/.forkbox-output"  # FORKBOX_OUTPUT_DIR overrides it (tests that run the agent on a host)
SPOOL_KEEP = 32
HOLD_MAX = 1 << 20  # head bytes kept for the spool file at most; past it the spool file is started early
OUTPUT_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def tail_budget(max_output_bytes):
    """The tail part of a per-stream inline budget; the head part is the rest."""
    return min(max_output_bytes // 4, TAIL_MAX)


def valid_output_id(output_id):
    return (isinstance(output_id, str) and 1 <= len(output_id) <= 64 and output_id not in (".", "..")
            and all(c in OUTPUT_ID_CHARS for c in output_id))


def spool_dir():
    return os.environ.get("FORKBOX_OUTPUT_DIR") or SPOOL_DIR


def _prune_spool_dir(d, keep_name):
    """Keep the newest SPOOL_KEEP files of the spool directory (best effort)."""
    try:
        names = [n for n in os.listdir(d) if n != keep_name]
    except OSError:
        return
    if len(names) < SPOOL_KEEP:
        return
    aged = []
    for n in names:
        try:
            aged.append((os.lstat(os.path.join(d, n)).st_mtime, n))
        except OSError:
            pass
    aged.sort()
    for _, n in aged[: len(aged) - (SPOOL_KEEP - 1)]:
        try:
            os.unlink(os.path.join(d, n))
        except OSError:
            pass


def open_spool(name, d=None):
    """Create <spool dir>/name for writing, never following a symlink nor opening a FIFO or device someone
    planted there (O_EXCL after unlinking what was there). Returns (fd, path) or (None, None)."""
    d = d or spool_dir()
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None, None
    try:
        st = os.lstat(d)
        if not stat.S_ISDIR(st.st_mode):
            return None, None
        path = os.path.join(d, name)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(path, flags, 0o600)
    except OSError:
        return None, None
    _prune_spool_dir(d, name)
    return fd, path


class StreamCapture:
    """One stream of one call. `spool_name` None (or spool_bytes 0) = no spool file."""

    def __init__(self, name, max_output_bytes, spool_name=None, spool_bytes=0, clock=time.monotonic,
                 spool_dir=None):
        self.name = name
        self.tail_part = tail_budget(max_output_bytes)
        self.head_left = max_output_bytes - self.tail_part
        self.head_sent = 0
        self.total = 0
        self._clock = clock
        self._ring = bytearray()
        self._held = bytearray()  # the head, kept until we know whether a spool file is needed
        self._spool_name = spool_name if spool_bytes > 0 else None
        self._spool_left = spool_bytes if self._spool_name else 0
        self._spool_fd = None
        self._spool_dir = spool_dir
        self.spool_path = None
        self.spooled = 0
        self._last_peek = None

    def feed(self, data):
        """Account `data`; returns the part to forward now as head (may be empty)."""
        self.total += len(data)
        head = b""
        if self.head_left > 0:
            head = bytes(data[: self.head_left])
            self.head_left -= len(head)
            self.head_sent += len(head)
            data = data[len(head):]
            if self._spool_fd is not None:
                self._write_spool(head)
            elif self._spool_name is not None and self.spool_path is None:
                self._held += head
                if len(self._held) > HOLD_MAX:
                    self._spool(b"")
        if data:
            self._spool(data)
            ring = self._ring
            ring += data
            if len(ring) > self.tail_part:
                del ring[: len(ring) - self.tail_part]
        return head

    def _spool(self, data):
        if self._spool_name is None or self._spool_left <= 0:
            return
        if self._spool_fd is None:
            if self.spool_path is not None:  # opened before, then failed or closed: stop
                return
            self._spool_fd, self.spool_path = open_spool(self._spool_name, self._spool_dir)
            if self._spool_fd is None:
                self._spool_name = None
                self._held = bytearray()
                return
            held, self._held = self._held, bytearray()
            self._write_spool(held)
        self._write_spool(data)

    def _write_spool(self, data):
        if not data or self._spool_fd is None:
            return
        data = memoryview(data)[: self._spool_left]
        try:
            while len(data):
                n = os.write(self._spool_fd, data)
                self.spooled += n
                self._spool_left -= n
                data = data[n:]
        except OSError:  # disk full, quota, the file was replaced by something odd: keep what is there
            self._spool_left = 0
        if self._spool_left <= 0:
            self._close_spool()

    def _close_spool(self):
        if self._spool_fd is not None:
            try:
                os.close(self._spool_fd)
            except OSError:
                pass
            self._spool_fd = None

    def peek(self, force=False):
        """The latest bytes (<= PEEK_BYTES) when output is flowing past the head and no peek was sent for
        PEEK_EVERY_S; else None."""
        if not self._ring:
            return None
        now = self._clock()
        if not force and self._last_peek is not None and now - self._last_peek < PEEK_EVERY_S:
            return None
        self._last_peek = now
        return bytes(self._ring[-PEEK_BYTES:])

    @property
    def omitted(self):
        return self.total - self.head_sent - len(self._ring)

    def finish(self):
        """End of the stream: returns (tail bytes to forward, result fields). A spool file that turned out
        to hold nothing left out (all fitted in head + tail) is removed."""
        self._close_spool()
        tail = bytes(self._ring)
        self._ring = bytearray()
        self._held = bytearray()
        omitted = self.total - self.head_sent - len(tail)
        path = self.spool_path if omitted > 0 and self.spooled > 0 else None
        if path is None and self.spool_path is not None:
            try:
                os.unlink(self.spool_path)
            except OSError:
                pass
        n = self.name
        return tail, {n + "_total": self.total, n + "_file": path, n + "_spooled": self.spooled if path else 0}
