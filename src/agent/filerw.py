"""`file.read` and `file.write`: bounded reads (sparse ones skip holes), atomic or in-place writes, and
`if_match` checked with the write in one operation. Standard library only."""

import os
import stat

import fileio
from execs import OpError
from protocol import MAX_BODY

_oserror = fileio.oserror


_path = fileio.path_arg
_int = fileio.int_arg


def file_read(args, body):
    """Read [offset, offset+length) of a regular file, with its ETag. `sparse`: only the data extents of
    the window (holes skipped): `extents` lists them and the body is their bytes, back to back."""
    path = _path(args)
    offset = _int(args, "offset", 0)
    length = _int(args, "length", None)
    if length is not None and length > MAX_BODY:
        raise OpError("too_large", "file.read length %d is over the %d-byte limit per call; read in parts"
                      % (length, MAX_BODY))
    # O_NONBLOCK: opening a FIFO for reading would otherwise block the whole agent; fstat refuses it.
    fd, st = fileio.open_regular(path, os.O_RDONLY)
    try:
        if length is None:
            length = max(st.st_size - offset, 0)
            if length > MAX_BODY:
                raise OpError("too_large", "%s has %d bytes from offset %d, over the %d-byte limit per call; "
                              "read it in parts with offset and length" % (path, length, offset, MAX_BODY))
        # The size at open bounds the read: a file growing meanwhile is read as it was.
        end = min(offset + length, st.st_size)
        result = {
            "size": st.st_size,
            "mode": stat.S_IMODE(st.st_mode),
            "mtime_ms": st.st_mtime_ns / 1e6,
            "etag": fileio.etag_of_fd(fd, st),
        }
        if args.get("sparse"):
            extents, covered = fileio.data_extents(fd, offset, end, st.st_size) if end > offset else ([], offset)
            parts = []
            for off, n in extents:
                chunk = _pread_exact(fd, n, off)
                parts.append(chunk)
                if len(chunk) < n:  # truncated meanwhile
                    extents = extents[: len(parts)]
                    extents[-1] = [off, len(chunk)]
                    break
            result["extents"] = extents
            result["end"] = covered
            result["eof"] = covered >= st.st_size
            return result, b"".join(parts)
        data = _pread_exact(fd, max(end - offset, 0), offset)
        result["eof"] = offset + len(data) >= st.st_size
        return result, data
    except OSError as e:
        raise _oserror(e, path)
    finally:
        os.close(fd)


def _pread_exact(fd, length, offset):
    data = bytearray(length)  # read in place: no per-chunk copies of up to 16 MiB
    view = memoryview(data)
    got = 0
    while got < length:
        n = os.preadv(fd, [view[got:]], offset + got)
        if n == 0:
            break
        got += n
    view.release()
    if got < length:
        del data[got:]
    return data


def _ensure_parent(path, create_dirs):
    parent = os.path.dirname(path)
    try:
        st = os.stat(parent)
    except FileNotFoundError:
        if not create_dirs:
            raise OpError("not_found", "directory %s does not exist; pass create_dirs to create it" % parent)
        try:
            os.makedirs(parent, 0o755, exist_ok=True)
        except OSError as e:
            raise _oserror(e, parent)
        return
    except OSError as e:
        raise _oserror(e, parent)
    if not stat.S_ISDIR(st.st_mode):
        raise OpError("not_a_directory", "%s is not a directory" % parent)


def file_write(args, body):
    """Replace a file atomically (temp file + rename), or write in place with `append` or `offset`. With
    `if_match`, the current ETag is compared and the write done in this one operation: the agent runs one
    file operation at a time, so of several writes with one ETag exactly one succeeds."""
    path = _path(args)
    mode = _int(args, "mode", 0o644) & 0o7777
    offset = _int(args, "offset", None)
    _ensure_parent(path, bool(args.get("create_dirs")))
    if os.path.isdir(path):
        raise OpError("is_a_directory", "%s is a directory" % path)
    fileio.check_if_match(path, args.get("if_match"))
    if args.get("append") or offset is not None:
        return _write_in_place(path, body, mode, offset)
    try:
        # Atomic: a reader sees the old or the new contents, never half a file, even if we die mid-write.
        tmp = os.path.join(os.path.dirname(path), ".%s.forkbox-%s.tmp" % (os.path.basename(path), os.urandom(4).hex()))
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            _write_all(fd, body)
            os.fchmod(fd, mode)  # the requested mode exactly, whatever the umask
            os.fsync(fd)
            os.rename(tmp, path)
            return {"size": len(body), "etag": fileio.etag_of_fd(fd, os.fstat(fd))}, b""
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        finally:
            os.close(fd)
    except OSError as e:
        raise _oserror(e, path)


def _write_in_place(path, body, mode, offset):
    """Append, or write at `offset` (at most the current size: no holes), into a regular file; never
    through a symlink, a FIFO or a device (refused, without blocking)."""
    flags = os.O_RDWR  # read too: the new ETag may hash the content
    if offset is None:
        flags |= os.O_APPEND | os.O_CREAT
    elif offset == 0:
        flags |= os.O_CREAT
    fd, st = fileio.open_regular(path, flags, mode, follow=False)
    try:
        if offset is not None and offset > st.st_size:
            raise OpError("bad_request", "offset %d is past the end of %s (%d bytes); write from offset %d or "
                          "less" % (offset, path, st.st_size, st.st_size))
        if offset is None:
            _write_all(fd, body)
        else:
            view = memoryview(body)
            pos = offset
            while len(view):
                n = os.pwrite(fd, view, pos)
                view, pos = view[n:], pos + n
        st = os.fstat(fd)
        return {"size": st.st_size, "etag": fileio.etag_of_fd(fd, st)}, b""
    except OSError as e:
        raise _oserror(e, path)
    finally:
        os.close(fd)


def _write_all(fd, data):
    view = memoryview(data)
    while len(view):
        view = view[os.write(fd, view):]
