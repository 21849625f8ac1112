"""`file.*` operations. They run in the agent's own mount namespace, so paths cannot leave the sandbox.
Each handler takes (args, body) and returns (result, body) or raises OpError. Standard library only.
"""

import errno
import os
import shutil
import stat

import fileio
from execs import OpError
from protocol import MAX_BODY

DEFAULT_LIST_LIMIT = 10000


def _path(args, key="path"):
    p = args.get(key)
    if not isinstance(p, str) or not p or "\0" in p:
        raise OpError("bad_request", "%s must be a non-empty string without NUL bytes" % key)
    return os.path.normpath(os.path.join("/", p))


def _int(args, key, default, minimum=0):
    v = args.get(key, default)
    if v is None:
        return default
    if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
        raise OpError("bad_request", "%s must be an integer >= %d" % (key, minimum))
    return v


_oserror = fileio.oserror


def _type(mode):
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def _entry(path, st):
    return {
        "path": path,
        "name": os.path.basename(path) or "/",
        "type": _type(st.st_mode),
        "size": st.st_size,
        "mode": stat.S_IMODE(st.st_mode),
        "mtime_ms": st.st_mtime_ns / 1e6,
    }


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


def file_list(args, body):
    root = _path(args)
    limit = _int(args, "limit", DEFAULT_LIST_LIMIT, 1)
    recursive = bool(args.get("recursive"))
    try:
        st = os.stat(root)
    except OSError as e:
        raise _oserror(e, root)
    if not stat.S_ISDIR(st.st_mode):
        raise OpError("not_a_directory", "%s is not a directory; use file.stat" % root)
    entries = []
    stack = [root]
    truncated = False
    while stack and not truncated:
        d = stack.pop()
        try:
            it = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as e:
            if d == root:
                raise _oserror(e, root)
            continue  # a subdirectory we cannot read: skip it, list the rest
        subdirs = []
        for de in it:
            if len(entries) >= limit:
                truncated = True
                break
            try:
                est = de.stat(follow_symlinks=False)  # symlinks are reported, not followed
            except OSError:
                continue
            entries.append(_entry(de.path, est))
            if recursive and stat.S_ISDIR(est.st_mode):
                subdirs.append(de.path)
        stack.extend(reversed(subdirs))
    return {"entries": entries, "truncated": truncated}, b""


def file_stat(args, body):
    path = _path(args)
    try:
        st = os.lstat(path)
    except OSError as e:
        raise _oserror(e, path)
    r = _entry(path, st)
    del r["name"]
    r["uid"], r["gid"] = st.st_uid, st.st_gid
    if stat.S_ISLNK(st.st_mode):
        try:
            r["link_target"] = os.readlink(path)
        except OSError:
            pass
    elif stat.S_ISREG(st.st_mode):
        try:
            r["etag"] = fileio.current_etag(path)
        except OpError:
            pass  # replaced by something else meanwhile: no etag
    return r, b""


def file_delete(args, body):
    path = _path(args)
    if path == "/":
        raise OpError("bad_request", "refusing to delete /")
    try:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            if not args.get("recursive"):
                raise OpError("is_a_directory", "%s is a directory; pass recursive to delete it" % path)
            shutil.rmtree(path)  # does not follow symlinks out of the tree
        else:
            os.unlink(path)
    except OSError as e:
        raise _oserror(e, path)
    return {}, b""


def file_mkdir(args, body):
    path = _path(args)
    mode = _int(args, "mode", 0o755) & 0o7777
    parents = args.get("parents", True) is not False
    try:
        if parents:
            if os.path.isdir(path):
                return {}, b""
            os.makedirs(path, mode)
        else:
            os.mkdir(path, mode)
    except FileExistsError:
        raise OpError("exists", "%s already exists" % path)
    except OSError as e:
        raise _oserror(e, path)
    return {}, b""


def file_move(args, body):
    src = _path(args, "from")
    dst = _path(args, "to")
    overwrite = bool(args.get("overwrite"))
    if_match = args.get("if_match")
    if if_match is not None:
        overwrite = True
        fileio.check_if_match(dst, if_match)
    try:
        sst = os.lstat(src)
        if args.get("regular") and not stat.S_ISREG(sst.st_mode):
            raise OpError("bad_request", "%s is %s, not a regular file; the file API only reads and writes "
                          "regular files" % (src, fileio.kind_of(sst.st_mode)))
        if os.path.lexists(dst):
            if not overwrite:
                raise OpError("exists", "%s already exists; pass overwrite to replace it" % dst)
            if os.path.isdir(dst) and not os.path.islink(dst) and not os.path.isdir(src):
                raise OpError("is_a_directory", "%s is a directory; a file cannot replace it" % dst)
        try:
            os.rename(src, dst)
        except OSError as e:
            if e.errno != errno.EXDEV:
                raise
            shutil.move(src, dst)
    except OSError as e:
        raise _oserror(e, src if not os.path.lexists(src) else dst)
    result = {}
    if args.get("regular"):
        etag = fileio.current_etag(dst)
        if etag is not None:
            result["etag"] = etag
    return result, b""


OPS = {
    "file.read": file_read,
    "file.write": file_write,
    "file.list": file_list,
    "file.stat": file_stat,
    "file.delete": file_delete,
    "file.mkdir": file_mkdir,
    "file.move": file_move,
}
