"""The agent's side of the persistent Node.js REPL (docs/ARCHITECTURE.md, "agent/"). Standard library only,
Python >= 3.8.

`repl.eval` with language "node" goes to one long-lived `node replnode.cjs` per sandbox, started on first use
off this agent (so in the sandbox's cgroups, under its limits, in its own session) with:
  fd 0 /dev/null, fds 1 and 2 pipes this agent reads for the life of the process, fd 3 a socketpair with
  the worker framing (worker.py's eval/started/result messages).
Node cannot take fds over a socket, so an eval's output is not a pair of pipes of its own as for Python:
what the process writes while an eval runs is that eval's output (replout.EvalOutput with `shared`), and
what it writes between evals (a callback a cell left behind) is read and dropped.

The queue, timeouts, interrupts and restarts are the Python REPL's (repl.Repl): SIGINT interrupts a running
cell (replnode.cjs turns it into an error); a cell that does not stop gets the process killed, and the next
use starts a fresh one (the result says restarted). Node is multi-threaded, so it is not forked with the
sandbox: a fork child's Node REPL starts fresh and its first answer says restarted.
"""

import json
import os
import selectors
import signal
import socket

import bounds
import cmdfilter
import sysc
from channel import Channel
from repl import Repl, WorkerHandle
from replout import STREAMS, EvalOutput, read_some

DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "replnode.cjs")


class NodeHandle(WorkerHandle):
    __slots__ = ("out_fds",)  # {read fd: stream} of the process's stdout and stderr pipes


def _find_node(path_var):
    for d in path_var.split(":"):
        cand = os.path.join(d or "/", "node")
        if os.access(cand, os.X_OK) and not os.path.isdir(cand):
            return cand
    return None


class NodeRepl(Repl):
    WHAT = "Node.js REPL"

    def submit(self, conn, req_id, kind, args, timeout_ms=0):
        Repl.submit(self, conn, req_id, kind, args, timeout_ms)
        if self.worker is None and not self.agent.shutting_down:
            self.start()

    def had_state(self):
        """A fork child's Node REPL cannot keep this one's state (a live process, or state not yet said lost)."""
        return self.worker is not None or self.untold_restart

    def start(self, adopt=None):
        """Lazily: only when an eval waits (a lost process is not replaced until the next use)."""
        if self.worker is not None or not self.queue or self.agent.shutting_down:
            return
        env = self.agent.base_env
        node = _find_node(env.get("PATH", ""))
        if node is None:
            self._refuse_all("requirement_missing", "this sandbox's image has no Node.js (no `node` on PATH=%s): "
                             "language node needs an image with Node.js, e.g. the default image" % env.get("PATH", ""))
            return
        try:
            self.worker = self._spawn(node, env)
        except OSError as e:
            self._refuse_all("internal", "cannot start the Node.js REPL: %s" % e)
            return
        self._idle_reader(True)
        self._pump()

    def _refuse_all(self, code, message):
        while self.queue:
            item = self.queue.popleft()
            self.agent.send_error(item.conn, item.id, code, message)

    def _spawn(self, node, env):
        parent_sock, child_sock = socket.socketpair()
        pipes = [os.pipe2(os.O_CLOEXEC) for _ in STREAMS]
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()  # its own group: the SIGINT of a timeout reaches what a cell started too
                if sysc.OOM_RANK is not None:
                    sysc.apply_oom_rank()
                for sig in (signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
                    signal.signal(sig, signal.SIG_DFL)
                signal.set_wakeup_fd(-1)
                null = os.open("/dev/null", os.O_RDONLY)
                os.dup2(null, 0)
                os.dup2(pipes[0][1], 1)
                os.dup2(pipes[1][1], 2)
                os.dup2(child_sock.fileno(), 3)
                try:
                    os.chdir(env.get("FORKBOX_REPL_CWD") or "/")
                except OSError:
                    os.chdir("/")
                cmdfilter.deny_new_userns()  # a command like any other: no user namespace of its own
                os.execve(node, [node, DRIVER, json.dumps(bounds.as_dict())], env)
            finally:
                os._exit(127)
        child_sock.close()
        out_fds = {}
        for (r, w), stream in zip(pipes, STREAMS):
            os.close(w)
            os.set_blocking(r, False)
            out_fds[r] = stream
        parent_sock.setblocking(False)
        h = NodeHandle(pid, Channel(self.agent.loop, parent_sock, self.on_frame, self.on_channel_close))
        h.out_fds = out_fds
        return h

    # ---- output between evals: read and dropped ----

    def _idle_reader(self, on):
        w = self.worker
        if w is None:
            return
        for fd in w.out_fds:
            try:
                if on:
                    self.agent.sel.register(fd, selectors.EVENT_READ, lambda mask, fd=fd: self._drop(fd))
                else:
                    self.agent.sel.unregister(fd)
            except (KeyError, ValueError):
                pass

    def _drop(self, fd):
        data = read_some(fd)
        if data is None:
            return
        if not data:  # the process is gone; its reaping restarts nothing until the next use
            try:
                self.agent.sel.unregister(fd)
            except (KeyError, ValueError):
                pass

    # ---- Repl hooks ----

    def _pump(self):
        w = self.worker
        if w is None or w.current is not None or not self.queue:
            return
        item = self.queue.popleft()
        a = item.args
        self._idle_reader(False)
        item.out = EvalOutput(self.agent, item.conn, item.id, a["max_output_bytes"], a.get("output_id"),
                              a.get("spool_bytes", 0), shared=w.out_fds)
        w.current = item
        w.channel.send({"t": "eval", "id": item.wid, "code": a["code"], "max_output_bytes": a["max_output_bytes"]})
        if item.timeout_ms:
            item.timers.append(self.agent.loop.add_timer(item.timeout_ms / 1000.0, lambda: self._timeout(item)))

    def _answer(self, item, result):
        Repl._answer(self, item, result)  # a shared output completes at once: its bytes are read now
        if self.worker is not None and self.worker.current is None:
            self._idle_reader(True)

    def _after_loss(self, handle):
        for fd in handle.out_fds:
            try:
                self.agent.sel.unregister(fd)
            except (KeyError, ValueError):
                pass
            try:
                os.close(fd)
            except OSError:
                pass
        handle.out_fds = {}

    def close_in_child(self):
        """In a process forked off the agent (the Python worker): drop the Node REPL's fds."""
        w = self.worker
        if w is not None:
            w.channel.close_in_child()
            for fd in w.out_fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
