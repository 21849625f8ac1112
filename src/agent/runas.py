"""Commands run as a pulled image's `User` (its OCI config): `name`, `uid`, `name:group` or `uid:gid`, resolved
against the sandbox's own /etc/passwd and /etc/group (the image's files, as the sandbox sees them now), and
started with fork + setgroups/setgid/setuid + exec: posix_spawn cannot change the user. The new user has no
capabilities (setuid from root to another uid clears them). Standard library only, Python >= 3.8.
"""

import fcntl
import os
import signal
import termios

MAX_TABLE = 1 << 20  # bytes of /etc/passwd or /etc/group read
MAX_ID = (1 << 32) - 2


class RunAsError(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


def _rows(path):
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_TABLE)
    except OSError:
        return []
    return [line.split(":") for line in data.decode("utf-8", "replace").splitlines() if line and line[0] != "#"]


def _num(s):
    return int(s) if s.isdigit() and int(s) <= MAX_ID else None


def resolve_user(spec):
    """`user[:group]` -> (uid, gid, home or None)."""
    name, _, group = spec.partition(":")
    uid = _num(name)
    gid, home = None, None
    for row in _rows("/etc/passwd"):
        if len(row) >= 6 and (row[0] == name if uid is None else _num(row[2]) == uid):
            uid, gid, home = _num(row[2]), _num(row[3]), row[5] or None
            break
    if uid is None:
        raise RunAsError("not_found", "the image's User '%s' is not in its /etc/passwd: no command can run as "
                         "it. Add the user to the image, or use an image whose User exists" % spec)
    if group:
        gid = _num(group)
        if gid is None:
            for row in _rows("/etc/group"):
                if len(row) >= 3 and row[0] == group:
                    gid = _num(row[2])
                    break
        if gid is None:
            raise RunAsError("not_found", "the image's User '%s' names group '%s', which is not in its /etc/group"
                             % (spec, group))
    return uid, (0 if gid is None else gid), home


def spawn_as(path, argv, env, fds, user, sigdef, tty=False):
    """Start `path` as `user` with fds (stdin, stdout, stderr) in a new session; returns its pid. With
    `tty`, stdin is a terminal, made the new session's controlling terminal."""
    uid, gid, home = resolve_user(user)
    if home and uid != 0 and env.get("HOME") == "/root":
        env = dict(env, HOME=home)
    r, w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            for i, fd in enumerate(fds):
                os.dup2(fd, i)
            os.setsid()
            if tty:
                fcntl.ioctl(0, termios.TIOCSCTTY, 0)
            for s in sigdef:
                signal.signal(s, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, [])
            os.setgroups([gid])
            os.setgid(gid)
            os.setuid(uid)
            os.execve(path, argv, env)
        except OSError as e:
            os.write(w, str(e.errno or 0).encode())
        finally:
            os._exit(127)
    os.close(w)
    try:
        err = os.read(r, 16)
    finally:
        os.close(r)
    if err:
        os.waitpid(pid, 0)
        raise OSError(int(err), "as user %s (uid %d, gid %d): %s" % (user, uid, gid, os.strerror(int(err))))
    return pid
