"""Exec trees by session, for runtimes whose host cannot see the sandbox's processes (gvisor: one sentry
holds them all). Every command starts as the leader of a session of its own (spawner.py: posix_spawn with
setsid), so an exec's tree is its session: what it started and did not move to a session of its own. The
host names trees (the exec's `tree`); `tree` counts or kills what is left of one (docs/AGENT-PROTOCOL.md)."""

import collections
import os
import signal

MAX_TREES = 1024  # trees remembered (the oldest are forgotten: their leftovers can no longer be named)


class Trees:
    def __init__(self):
        self.sid = collections.OrderedDict()  # tree name -> session id (the command's pid)

    def note(self, tree, pid):
        if not tree:
            return
        self.sid[tree] = pid
        self.sid.move_to_end(tree)
        while len(self.sid) > MAX_TREES:
            self.sid.popitem(last=False)

    def members(self, tree):
        sid = self.sid.get(tree)
        if sid is None:
            return []
        me = os.getpid()
        out = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open("/proc/%s/stat" % name, "rb") as f:
                    stat = f.read(4096)
            except OSError:
                continue
            # pid (comm) state ppid pgrp session ...: comm may hold spaces and parentheses.
            fields = stat[stat.rfind(b")") + 2 :].split()
            if len(fields) > 3 and fields[0] != b"Z" and int(fields[3]) == sid:
                out.append(int(name))
        return out

    def op(self, a):
        tree = a.get("tree")
        if not isinstance(tree, str) or not 0 < len(tree) <= 128:
            return None
        pids = self.members(tree)
        if a.get("kill"):
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            self.sid.pop(tree, None)
        return {"procs": len(pids)}
