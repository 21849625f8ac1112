"""Safe opens, ETags and sparse extents for fileops.py. Standard library only.

Every path a file operation reads or writes is opened with O_NONBLOCK (a FIFO, or a device that would
block, never blocks the agent, which is single-threaded) and O_NOCTTY, and checked with fstat after
open: only regular files are read or written. Writes that go to an existing file in place (append,
offset, an upload's later chunks) also use O_NOFOLLOW, so a symlink swapped in is refused, not followed.
"""

import errno
import hashlib
import os
import stat

from execs import OpError, _ERRNO_CODES

# Files up to this size have their content in the ETag too (cheap); above it, their identity and
# timestamps only, so an ETag never costs reading a big file.
ETAG_CONTENT_BYTES = 1 << 20
# Data extents returned by one sparse read (bounds the response header).
MAX_EXTENTS = 256

_SPECIAL = "a FIFO, socket or device"


def path_arg(args, key="path"):
    p = args.get(key)
    if not isinstance(p, str) or not p or "\0" in p:
        raise OpError("bad_request", "%s must be a non-empty string without NUL bytes" % key)
    # One leading slash: POSIX normpath keeps two ("//x"), which names the same file but reads oddly.
    return os.path.normpath("/" + p.lstrip("/"))


def int_arg(args, key, default, minimum=0):
    v = args.get(key, default)
    if v is None:
        return default
    if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
        raise OpError("bad_request", "%s must be an integer >= %d" % (key, minimum))
    return v


def oserror(e, path):
    if e.errno == errno.ENXIO:
        return OpError("bad_request", "%s is %s (no reader), not a regular file; the file API only reads and "
                       "writes regular files" % (path, _SPECIAL))
    if e.errno == errno.ELOOP:
        return OpError("bad_request", "%s is a symlink; write to its target path instead" % path)
    code = _ERRNO_CODES.get(e.errno, "internal")
    return OpError(code, "%s: %s" % (path, e.strerror or e))


# File types: the test, the type file.list reports, the words an error message names it by.
_MODE_KINDS = (
    (stat.S_ISREG, "file", "a regular file"),
    (stat.S_ISDIR, "dir", "a directory"),
    (stat.S_ISLNK, "symlink", "a symlink"),
    (stat.S_ISFIFO, "other", "a FIFO"),
    (stat.S_ISSOCK, "other", "a socket"),
    (stat.S_ISCHR, "other", "a device"),
    (stat.S_ISBLK, "other", "a device"),
)


def mode_kind(mode):
    """(type, words) of a file mode: the type file.list reports and the words an error names it by."""
    for test, kind, words in _MODE_KINDS:
        if test(mode):
            return kind, words
    return "other", "not a regular file"


def kind_of(mode):
    """How an error message names what a non-regular file is ("a FIFO", "a directory", ...)."""
    return mode_kind(mode)[1]


def check_regular(fd, path):
    """fstat an open fd: the stat result when it is a regular file; otherwise close it and refuse."""
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode):
        return st
    os.close(fd)
    if stat.S_ISDIR(st.st_mode):
        raise OpError("is_a_directory", "%s is a directory; use file.list" % path)
    raise OpError("bad_request", "%s is %s, not a regular file; the file API only reads and writes regular "
                  "files" % (path, kind_of(st.st_mode)))


def open_regular(path, flags, mode=0o644, follow=True):
    """Open `path` without blocking and return (fd, stat) for a regular file, or raise OpError."""
    if not follow:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        except OSError as e:
            raise oserror(e, path)
        # Refuse before open where we can (opening a device may act); fstat below closes the race.
        if st is not None and not stat.S_ISREG(st.st_mode):
            if stat.S_ISDIR(st.st_mode):
                raise OpError("is_a_directory", "%s is a directory" % path)
            raise OpError("bad_request", "%s is %s, not a regular file; the file API only reads and writes "
                          "regular files" % (path, kind_of(st.st_mode)))
    flags |= os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    if not follow:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags, mode)
    except OSError as e:
        raise oserror(e, path)
    return fd, check_regular(fd, path)


def etag_of_fd(fd, st):
    """The ETag of an open regular file: its identity, size and timestamps (ctime cannot be set by a
    process), and for small files its content too (two writes within one clock tick still differ)."""
    h = hashlib.sha256(b"%d:%d:%d:%d:%d" % (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    if st.st_size <= ETAG_CONTENT_BYTES:
        off = 0
        while off < st.st_size:
            chunk = os.pread(fd, st.st_size - off, off)
            if not chunk:
                break
            h.update(chunk)
            off += len(chunk)
    return "fb-" + h.hexdigest()[:32]


def current_etag(path):
    """The ETag of the regular file at `path`, or None when nothing is there."""
    try:
        fd, st = open_regular(path, os.O_RDONLY)
    except OpError as e:
        if e.code == "not_found":
            return None
        raise
    try:
        return etag_of_fd(fd, st)
    finally:
        os.close(fd)


def check_if_match(path, if_match):
    """Refuse with `conflict` unless the file at `path` has the ETag `if_match` (no-op when None)."""
    if if_match is None:
        return
    if not isinstance(if_match, str) or not if_match:
        raise OpError("bad_request", "if_match must be a non-empty string (an etag)")
    now = current_etag(path)
    if now == if_match:
        return
    if now is None:
        raise OpError("conflict", "%s does not exist (if_match %s was given): list the directory, then decide "
                      "again" % (path, if_match))
    raise OpError("conflict", "%s changed since you read it (if_match %s, current etag %s): read it again and "
                  "apply your change to the current content" % (path, if_match, now))


def data_extents(fd, start, end, size):
    """The data (non-hole) ranges of [start, end) as [offset, length] pairs, at most MAX_EXTENTS, and the
    offset to continue from (past a hole that runs beyond the window: the next data, or `size`).
    Filesystems without SEEK_DATA give one range: the whole window."""
    out = []
    pos = start
    while pos < end and len(out) < MAX_EXTENTS:
        try:
            data = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:  # only a hole from pos to the end of the file
                return out, max(end, size)
            if e.errno in (errno.EINVAL, errno.EOPNOTSUPP):
                out.append([pos, end - pos])
                return out, end
            raise
        if data >= end:
            return out, data if not out else end
        hole = min(os.lseek(fd, data, os.SEEK_HOLE), end)
        out.append([data, hole - data])
        pos = hole
    return out, min(pos, end)
