"""`file.*` operations. They run in the agent's own mount namespace, so paths cannot leave the sandbox.
Each handler takes (args, body) and returns (result, body) or raises OpError. Standard library only.
"""

import errno
import os
import shutil
import stat

import fileio
from execs import OpError

DEFAULT_LIST_LIMIT = 10000


_path = fileio.path_arg
_int = fileio.int_arg
_oserror = fileio.oserror


def _entry(path, st):
    return {
        "path": path,
        "name": os.path.basename(path) or "/",
        "type": fileio.mode_kind(st.st_mode)[0],
        "size": st.st_size,
        "mode": stat.S_IMODE(st.st_mode),
        "mtime_ms": st.st_mtime_ns / 1e6,
    }


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
