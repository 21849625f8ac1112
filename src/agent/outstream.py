"""Bounded output of one stream (stdout or stderr) of a command or a REPL call, as docs/AGENT-PROTOCOL.md
("Output of exec and repl.eval") defines it: the one implementation, used by execs (execs.py) and by REPL
evals (replout.py) alike. Standard library only, Python >= 3.8; its one agent import is its bounds.

Whatever a program prints, this keeps a bounded amount of memory:

- `budget` (max_output_bytes) is the inline budget of the stream: a head part, forwarded at once, and a
  tail part (`tail_part(budget)` = min(budget / 4, 64 KiB)) kept in a ring and sent just before the result.
- The whole stream goes to a spool file, /tmp/.forkbox-output/<output_id>.<stream>, up to `spool_bytes`.
  The file is made only when the stream outgrows what is kept in memory (SPOOL_LAZY bytes), and removed at
  the end when nothing was left out of head + tail, so small outputs cost no file at all.
- Past the head, a `peek` (the latest PEEK_BYTES) is offered at most every PEEK_EVERY_S, for progress.

Two ways of forwarding:

- mode "head" (the default): the head part is forwarded as it arrives; the rest only as the tail.
- mode "latest" (background commands that may run for days): everything is forwarded, but at most `rate`
  bytes per second (a token bucket of `rate` bytes); when output comes faster, only the newest bytes are
  forwarded once the budget allows (the skipped ones are in the spool file). Each forwarded piece carries its
  offset in the stream, so a reader sees every gap exactly.

Use:
    s = OutStream("stdout", budget, spool_bytes, output_id, mode="head")  # spool_dir=SPOOL_DIR
    for body, offset in s.feed(data, now): send an event ("stdout", body, offset)
    p = s.peek(now)            -> latest bytes, or None (past the head, at most every PEEK_EVERY_S)
    for body, offset in s.flush(now): ...    (mode "latest": what the budget allows now; call on a timer
                                              while s.waiting())
    tail, offset = s.finish()  -> the tail bytes to send before the result (b"" when none)
    fields = s.result_fields() -> {"stdout_total", "stdout_file", "stdout_spooled"}
    s.close()                  -> always, once done (closes the spool file)
"""

import errno
import os
import stat

import bounds

SPOOL_DIR = "/tmp/.forkbox-output"
SPOOL_KEEP = 32  # newest spool files kept in SPOOL_DIR; older ones are removed when a new one is made
SPOOL_LAZY = 64 * 1024  # bytes kept in memory before a spool file is needed
TAIL_MAX = bounds.TAIL_BYTES
PEEK_BYTES = 2048
PEEK_EVERY_S = 2.0
DEFAULT_RATE = 1 << 20  # mode "latest": bytes per second forwarded, and the bucket's size
STREAMS = ("stdout", "stderr")


def tail_part(budget):
    return min(budget // 4, TAIL_MAX)


OUTPUT_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def valid_output_id(s):
    """An output id names spool files: [A-Za-z0-9_.-]{1,64}, not starting with a dot (no ".", "..")."""
    return isinstance(s, str) and 0 < len(s) <= 64 and s[0] != "." and all(c in OUTPUT_ID_CHARS for c in s)


class OutStream:
    def __init__(self, stream, budget, spool_bytes=0, output_id=None, mode="head", rate=DEFAULT_RATE,
                 open_files=None, spool_dir=SPOOL_DIR):
        self.stream = stream
        self.budget = max(0, budget)
        self.tail_max = tail_part(self.budget)
        self.head_max = self.budget - self.tail_max
        self.spool_cap = max(0, spool_bytes) if output_id else 0
        self.output_id = output_id
        self.spool_dir = spool_dir
        self.mode = mode
        self.rate = max(1, rate)
        self.tokens = float(self.rate)
        self.last_refill = None
        self.total = 0
        self.head_sent = 0
        self.ring = bytearray()  # newest bytes not forwarded (head: past the head; latest: over the budget)
        self.ring_end = 0  # stream offset just after the ring's last byte
        self.early = bytearray()  # the stream's first bytes, while no spool file exists (<= SPOOL_LAZY)
        self.spool_fd = None
        self.spool_path = None
        self.spooled = 0
        self.spool_failed = False
        self.last_peek = None
        self.forwarded_end = 0  # mode "latest": offset after the last forwarded byte
        self.latest_sent = 0  # mode "latest": bytes forwarded by feed() and flush()
        self.tail_sent = 0
        # Paths of spool files in use by this process (shared by the streams of one agent): never pruned.
        self.open_files = open_files if open_files is not None else set()

    # ---- input ----

    def feed(self, data, now):
        """Take bytes the program wrote; returns [(body, offset)] to forward now."""
        if not data:
            return []
        start = self.total
        self.total += len(data)
        self._spool(data)
        if self.mode == "latest":
            return self._feed_latest(data, start, now)
        out = []
        if self.head_sent < self.head_max:
            n = min(self.head_max - self.head_sent, len(data))
            out.append((bytes(data[:n]), start))
            self.head_sent += n
            data = data[n:]
            start += n
        if data:
            self._keep(data, start)
        return out

    def _keep(self, data, start):
        """Keep the newest tail_max bytes of what was not forwarded (data starts at stream offset start)."""
        end = start + len(data)
        keep = self.tail_max if self.mode == "head" else max(self.tail_max, PEEK_BYTES)
        if len(data) >= keep:
            self.ring = bytearray(data[len(data) - keep:])
        else:
            self.ring += data
            if len(self.ring) > keep:
                del self.ring[: len(self.ring) - keep]
        self.ring_end = end

    def _feed_latest(self, data, start, now):
        self._refill(now)
        if self.ring or self.tokens < len(data):
            self._keep(data, start)
            return self.flush(now)
        self.tokens -= len(data)
        self.forwarded_end = start + len(data)
        self.latest_sent += len(data)
        return [(bytes(data), start)]

    def _refill(self, now):
        if self.last_refill is not None:
            self.tokens = min(float(self.rate), self.tokens + (now - self.last_refill) * self.rate)
        self.last_refill = now

    def waiting(self):
        """Mode "latest": bytes wait for the budget (call flush() again later)."""
        return self.mode == "latest" and bool(self.ring)

    def flush(self, now):
        """Mode "latest": forward the newest waiting bytes the budget allows (at least the peek size, so a
        slow budget still shows the latest output)."""
        if not self.ring:
            return []
        self._refill(now)
        n = min(len(self.ring), int(self.tokens))
        if n < min(len(self.ring), PEEK_BYTES):
            return []
        body = bytes(self.ring[len(self.ring) - n:])
        offset = self.ring_end - n
        self.tokens -= n
        self.ring = bytearray()
        self.forwarded_end = self.ring_end
        self.latest_sent += n
        return [(body, offset)]

    def peek(self, now):
        """Past the head (mode "head"), the latest bytes at most every PEEK_EVERY_S; else None."""
        if self.mode != "head" or not self.ring:
            return None
        if self.last_peek is not None and now - self.last_peek < PEEK_EVERY_S:
            return None
        self.last_peek = now
        return bytes(self.ring[-PEEK_BYTES:])

    def start_peeks(self, now):
        """The first peek comes PEEK_EVERY_S after this (call when the program starts)."""
        if self.last_peek is None:
            self.last_peek = now

    # ---- spool ----

    def _spool(self, data):
        if self.spool_cap <= 0 or self.spool_failed:
            return
        if self.spool_fd is None:
            if self.total <= SPOOL_LAZY and self.mode == "head":
                self.early += data  # the whole stream so far: small outputs never make a file
                return
            if not self._open_spool():
                return
            pending, self.early = bytes(self.early), bytearray()
            self._write(pending)
        self._write(data)

    def _write(self, data):
        left = self.spool_cap - self.spooled
        if left <= 0 or not data:
            return
        view = memoryview(data)[:left]
        try:
            while len(view):
                n = os.write(self.spool_fd, view)
                self.spooled += n
                view = view[n:]
        except OSError:
            self.spool_failed = True  # disk full, quota: keep what was written
            self._close_fd()

    def _open_spool(self):
        try:
            _ensure_dir(self.spool_dir)
            path = "%s/%s.%s" % (self.spool_dir, self.output_id, self.stream)
            # A new file, whatever code in the sandbox planted at that name: never a symlink followed, nor a
            # FIFO or device opened (O_EXCL after removing what was there; O_NONBLOCK in case).
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
            fd = os.open(path, flags, 0o600)
        except OSError:
            self.spool_failed = True
            self.early = bytearray()
            return False
        self.spool_fd = fd
        self.spool_path = path
        self.open_files.add(path)
        _prune(self.spool_dir, self.open_files)
        return True

    def _close_fd(self):
        if self.spool_fd is not None:
            try:
                os.close(self.spool_fd)
            except OSError:
                pass
            self.spool_fd = None

    # ---- end ----

    def omitted(self):
        """Bytes not forwarded (so far: call after finish() for the final figure)."""
        return self.total - self.head_sent - self.tail_sent - self.latest_sent

    def finish(self):
        """The tail to send before the result: (bytes, offset). Mode "latest": what still waits, regardless
        of the budget (the end of a background command's output is what explains it). A stream that stayed
        under SPOOL_LAZY but left bytes out of head + tail gets its spool file now, so they are kept."""
        if self.spool_fd is None and self.early and self.total > self.head_sent + len(self.ring):
            if self._open_spool():
                pending, self.early = bytes(self.early), bytearray()
                self._write(pending)
        self.early = bytearray()
        tail = bytes(self.ring)
        offset = self.ring_end - len(tail)
        self.ring = bytearray()
        self.tail_sent = len(tail)
        if tail:
            self.forwarded_end = self.ring_end
        return tail, offset

    def result_fields(self):
        """Call after finish(). The spool file is named when bytes were left out (mode "head"), or always
        once it exists (mode "latest": readers of the host's bounded copy need it), and holds some bytes."""
        s = self.stream
        keep = self.spool_path is not None and self.spooled > 0 and (self.mode == "latest" or self.omitted() > 0)
        if not keep and self.spool_path is not None:
            self._unlink()
        return {
            s + "_total": self.total,
            s + "_file": self.spool_path if keep else None,
            s + "_spooled": self.spooled if keep else 0,
        }

    def _unlink(self):
        self._close_fd()
        try:
            os.unlink(self.spool_path)
        except OSError:
            pass
        self.open_files.discard(self.spool_path)
        self.spool_path = None
        self.spooled = 0

    def close(self):
        self._close_fd()
        if self.spool_path is not None:
            self.open_files.discard(self.spool_path)


def _ensure_dir(path):
    """Make the spool directory (0700) unless it exists; refuse anything but a real directory there (a
    symlink planted by user code would send the agent's writes elsewhere)."""
    try:
        os.mkdir(path, 0o700)
    except OSError as e:
        if e.errno != errno.EEXIST:
            raise
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(errno.ENOTDIR, "%s is not a directory" % path)


def _prune(spool_dir, in_use):
    """Keep the newest SPOOL_KEEP files of the spool directory (never one in use)."""
    try:
        names = os.listdir(spool_dir)
    except OSError:
        return
    if len(names) <= SPOOL_KEEP:
        return
    entries = []
    for n in names:
        p = spool_dir + "/" + n
        if p in in_use:
            continue
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            entries.append((st.st_mtime, p))
    entries.sort()
    for _, p in entries[: max(0, len(names) - SPOOL_KEEP)]:
        try:
            os.unlink(p)
        except OSError:
            pass
