#!/usr/bin/env python3
"""forkbox agent: PID 1 of every native sandbox and template (docs/AGENT-PROTOCOL.md).

One thread, one selectors loop: it reaps zombies (SIGCHLD through a wakeup pipe, then waitpid(-1) until
empty), connects to the host's control socket (reconnecting with backoff forever), serves the protocol's
operations, and never runs user code itself: commands run in forked children, Python in the REPL worker.
Standard library only, Python >= 3.8.
"""

import collections
import gc
import os
import resource
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bounds  # noqa: E402
import fileops  # noqa: E402
import filerw  # noqa: E402
import holding  # noqa: E402
import sysc  # noqa: E402
import trees  # noqa: E402
from channel import AGENT_LOG, Channel, Loop, log  # noqa: E402
from execs import Exec, OpError, check_size  # noqa: E402
from outstream import SPOOL_DIR, valid_output_id  # noqa: E402
from spawner import Spawner  # noqa: E402
from protocol import MAX_BODY, MAX_HEADER, PROTOCOL_VERSION, encode_header, recv_frame, send_frame  # noqa: E402
from repl import DEFAULT_MAX_OUTPUT, MAX_OUTPUT_LIMIT, MAX_SPOOL_BYTES, Repl, WorkerHandle  # noqa: E402
from netrelay import NetRelay, proxy_env  # noqa: E402
from noderepl import NodeRepl  # noqa: E402
from portrelay import PortRelay  # noqa: E402
from worker import Worker  # noqa: E402

AGENT_VERSION = "0.1.0"
DEFAULT_CTL_SOCKET = "/.forkbox/inbox/ctl.sock"
BACKOFF_MIN_S, BACKOFF_MAX_S = 0.05, 1.0
HIGH_WATER, LOW_WATER = 8 << 20, 1 << 20  # bytes queued to the host: pause / resume reading exec output
SHUTDOWN_GRACE_S = 3.0
MAX_KEPT_RESULTS = 256  # results of execs that ended while no host was connected (exec.results)
GREET_TIMEOUT_S = 30.0  # a new sandbox's wait for the host's welcome (the host gives up on it after 10 s)
# Not for user code: the control socket path is plumbing, and the nonce proves this agent to the host.
# FORKBOX_OUTPUT_DIR moves the spool files of exec output (tests of the agent on a host).
INTERNAL_ENV = ("FORKBOX_CTL_SOCKET", "FORKBOX_NONCE", "FORKBOX_OUTPUT_DIR")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _noop(signum, frame):
    pass


def _int_arg(args, key, default, limit=None):
    v = args.get(key, default)
    if v is None:
        v = default
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise OpError("bad_request", "%s must be a non-negative integer" % key)
    return min(v, limit) if limit is not None else v


class Agent:
    def __init__(self, adopt=None, restrict_error=None, host_sock=None, net_port=None):
        env = os.environ
        # Commands must not run with the capabilities the agent keeps for forking: refuse execs instead.
        self.restrict_error = restrict_error
        self.role = env.get("FORKBOX_ROLE", "sandbox")
        self.sandbox_id = env.get("FORKBOX_SANDBOX_ID") or env.get("FORKBOX_TEMPLATE_ID") or ""
        self.nonce = env.get("FORKBOX_NONCE", "")
        self.ctl_path = env.get("FORKBOX_CTL_SOCKET") or DEFAULT_CTL_SOCKET
        self.spool_dir = env.get("FORKBOX_OUTPUT_DIR") or SPOOL_DIR
        for k in INTERNAL_ENV:
            env.pop(k, None)
        self.base_env = dict(env)
        self.base_env.setdefault("PATH", DEFAULT_PATH)
        self.loop = Loop()
        self.sel = self.loop.sel
        self.add_timer = self.loop.add_timer
        self.netrelay = None
        if net_port is not None:
            try:
                self.netrelay = NetRelay(self.sel, net_port)
            except OSError as e:
                log("cannot start the network relay on port %d: %s" % (net_port, e), "warn")
        self.portrelay = PortRelay(self.sel)
        self.spawner = Spawner(self.loop, self._command_exited)
        self.conn = None
        self.ever_connected = False
        self.backoff = BACKOFF_MIN_S
        self.exec_by_pid = {}
        self.kept_results = collections.OrderedDict()  # exec tag -> result (bounded)
        self.spool_files = set()  # spool paths in use (outstream.py never prunes them)
        self.doomed = set()  # killed workers not reaped yet: shutdown waits for them
        self.paused = set()  # Execs waiting for the host connection to drain
        self.repl = Repl(self)
        self.trees = trees.Trees()  # exec trees by session (trees.py)
        self.hold = holding.Hold(self)  # held for a checkpoint (the gvisor runtime): holding.py
        self.node = NodeRepl(self)  # the Node.js REPL (noderepl.py): started on first use
        if adopt is not None and getattr(adopt, "node_state", False):
            # Forked from a sandbox whose Node REPL had state: it is not carried over (not forkable); the
            # first Node answer here says restarted.
            self.node.untold_restart = True
        self.adopt = adopt  # a Worker (user state) to fork off once the host has welcomed us
        self.host_sock = host_sock  # a host connection already welcomed (greet_host), or None
        self.shutting_down = False
        self.t0 = time.monotonic()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        self._install_signals()
        self.sel.register(self.wake_r, 1, self._on_wakeup)
        AGENT_LOG.detach()  # a forked sandbox's agent starts with its source's log sink: not ours
        try:
            # Not dumpable: nothing the user runs (the worker forked off us keeps the flag, commands do not)
            # can ptrace this process or read its /proc/<pid>/mem, environ or fd links without
            # CAP_SYS_PTRACE, which no sandbox has (docs/SECURITY.md).
            sysc.set_not_dumpable()  # again: a forked sandbox's agent never ran main()
        except OSError as e:
            log("cannot make the agent non-dumpable: %s" % e, "warn")

    @staticmethod
    def _install_signals():
        """SIGCHLD wakes the loop. SIGTERM/SIGINT end the agent gracefully when it is not PID 1 (tests on the
        host). As PID 1 of the sandbox they keep the default action: the kernel then drops them when they
        come from inside the sandbox (a user cannot stop or end its agent), and from the host they end it."""
        signal.signal(signal.SIGCHLD, _noop)  # a Python handler must exist for the wakeup fd to be written
        signal.signal(signal.SIGUSR2, _noop)  # the host's wake after a checkpoint (holding.py)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL if os.getpid() == 1 else _noop)

    # ---- main loop, signals, reaping ----

    def run(self):
        if self.adopt is None:
            self.repl.start()
        if self.host_sock is not None:
            sock, self.host_sock = self.host_sock, None
            self._adopt_connection(sock)
        else:
            self._connect()
        self._reap()  # a child may have ended before the wakeup fd existed
        while True:
            self.loop.run_once()

    def _on_wakeup(self, mask):
        try:
            data = os.read(self.wake_r, 512)
        except BlockingIOError:
            data = b""
        for signum in set(data):
            if signum in (signal.SIGTERM, signal.SIGINT):
                self.shutdown("signal %d" % signum)
            elif signum == signal.SIGUSR2:
                self.hold.wake()
        self._reap()

    def _reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            ex = self.exec_by_pid.pop(pid, None)
            if ex is not None:
                ex.on_exit(status)  # a command whose spawner died before it: reparented to us
            elif pid == self.spawner.pid:
                self.spawner.reaped(pid)
            elif self.repl.worker is not None and pid == self.repl.worker.pid:
                self.repl.lost(_exit_how(status), pid)
            elif self.node.worker is not None and pid == self.node.worker.pid:
                self.node.lost(_exit_how(status), pid)
            self.doomed.discard(pid)  # after lost(), which marks the pid it kills
        if (self.shutting_down and not self.exec_by_pid and self.repl.worker is None and self.node.worker is None
                and not self.doomed):
            self._exit()

    def shutdown(self, why):
        """SIGTERM/SIGINT to the agent: pass SIGTERM on to every command group and the worker, then leave."""
        if self.shutting_down:
            return
        log("shutting down (%s)" % why)
        self.shutting_down = True
        for ex in list(self.exec_by_pid.values()):
            ex.kill_group(signal.SIGTERM)
        for r in (self.repl, self.node):
            if r.worker is not None:
                r.lost("the agent is shutting down")
        self.add_timer(SHUTDOWN_GRACE_S, self._exit)

    def _exit(self):
        for ex in list(self.exec_by_pid.values()):
            ex.kill_group(signal.SIGKILL)
        os._exit(0)

    # ---- worker process ----

    def spawn_worker(self, adopt):
        parent_sock, child_sock = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            try:
                parent_sock.close()  # the agent's end of the link: user code must never hold it
                if sysc.OOM_RANK is not None:
                    sysc.apply_oom_rank()  # user code is never exempt from the OOM killer, as the agent is
                AGENT_LOG.detach()
                self._close_in_worker(child_sock, sweep=adopt is None)
                w = adopt if adopt is not None else Worker(become_child=become_child, greet=greet_host)
                w.setup_process()
                if adopt is None:
                    w.prewarm()
                w.serve(child_sock)
            finally:
                os._exit(1)
        child_sock.close()
        return WorkerHandle(pid, Channel(self.loop, parent_sock, self.repl.on_frame, self.repl.on_channel_close))

    def _close_in_worker(self, keep, sweep):
        """In the new worker: drop every agent fd. User code must not inherit the host connection (it would
        speak as the agent) or exec pipes (their commands would never see EOF)."""
        signal.set_wakeup_fd(-1)
        self.sel.close()
        if self.netrelay is not None:
            self.netrelay.close_in_child()
        self.portrelay.close_in_child()
        os.close(self.wake_r)
        os.close(self.wake_w)
        if self.conn is not None:
            self.conn.close_in_child()
        w = self.repl.worker
        if w is not None:
            w.channel.close_in_child()
        self.node.close_in_child()
        for ex in self.exec_by_pid.values():
            ex.close_fds_in_child()
        for ex in self.starting():
            ex.close_fds_in_child()
        self.spawner.close_in_child()
        if sweep:
            # A fresh worker has no user state: close whatever else is open (e.g. files the agent of a forked
            # sandbox inherited from its parent's worker). The objects owning them stay referenced by this
            # never-returning stack, so nothing closes a reused fd number later.
            for name in os.listdir("/proc/self/fd"):
                fd = int(name)
                if fd > 2 and fd != keep.fileno():
                    try:
                        os.close(fd)
                    except OSError:
                        pass

    # ---- host connection ----

    def _adopt_connection(self, s):
        """Take over a connection the host has already welcomed (a forked sandbox's, see greet_host)."""
        s.setblocking(False)
        conn = Channel(self.loop, s, self._on_frame, self._on_conn_close, self._on_drain)
        conn.welcomed = True
        conn.execs = {}
        self.conn = conn
        self.ever_connected = True
        self._welcomed()

    def backoff_reset(self):
        self.backoff = BACKOFF_MIN_S

    def connect_now(self):
        self._connect()

    def _welcomed(self):
        self.backoff = BACKOFF_MIN_S
        AGENT_LOG.attach(self._send_log)
        if self.adopt is not None:
            # The host has moved this PID 1 into the sandbox's cgroups: the worker, forked off it when
            # Python is first needed, inherits them.
            w, self.adopt = self.adopt, None
            self.repl.defer(w)

    def _connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(self.ctl_path)
        except OSError:
            s.close()
            self.add_timer(self.backoff, self._connect)
            self.backoff = min(self.backoff * 2, BACKOFF_MAX_S)
            return
        conn = Channel(self.loop, s, self._on_frame, self._on_conn_close, self._on_drain)
        conn.welcomed = False
        conn.execs = {}
        self.conn = conn
        w = self.repl.worker
        conn.send(hello_header(self.role, self.sandbox_id, self.nonce, w.pid if w is not None else None,
                               self.ever_connected))
        self.ever_connected = True

    def _send_log(self, level, text, dropped):
        conn = self.conn
        if conn is None or conn.closed or not conn.welcomed:
            raise OSError("no host connection")
        h = {"t": "log", "level": level, "msg": text}
        if dropped:
            h["dropped"] = dropped
        conn.send(h)

    def _on_conn_close(self, conn, reason):
        if self.conn is conn:
            AGENT_LOG.detach()
        if self.hold.held:
            log("host connection closed for a checkpoint; reconnecting once woken")
        else:
            log("host connection lost (%s); reconnecting" % reason, "warn")
        for ex in conn.execs.values():
            ex.conn = None  # keeps running; later output is discarded, its result kept (exec.results)
        conn.execs = {}
        for ex in list(self.paused):
            ex.resume()
        self.paused.clear()
        self.repl.drop_conn(conn)
        self.node.drop_conn(conn)
        if self.conn is conn:
            self.conn = None
            if self.hold.held:
                return  # no new host connection until woken (holding.py)
            self.add_timer(self.backoff, self._connect)
            self.backoff = min(self.backoff * 2, BACKOFF_MAX_S)

    def _on_drain(self, conn):
        self.hold.drained(conn)
        if conn.pending < LOW_WATER and self.paused:
            for ex in list(self.paused):
                ex.resume()
            self.paused.clear()

    def congested(self, conn):
        return conn.pending > HIGH_WATER

    def _on_frame(self, conn, h, body):
        t = h["t"]
        if not conn.welcomed:
            if t != "welcome":
                conn.close("expected 'welcome' before '%s'" % t)
                return
            conn.welcomed = True
            self._welcomed()
            return
        if t == "req":
            rid = h.get("id")
            if not isinstance(rid, int) or isinstance(rid, bool) or rid <= 0:
                conn.close("request without a positive integer id")
                return
            try:
                self._request(conn, rid, h.get("op"), h, body)
            except OpError as e:
                self.send_error(conn, rid, e.code, e.message)
            except Exception as e:
                log("op %r failed: %r" % (h.get("op"), e))
                self.send_error(conn, rid, "internal", "%s failed inside the agent: %s: %s" % (h.get("op"), type(e).__name__, e))
        elif t == "cancel":
            cid = h.get("id")
            ex = conn.execs.get(cid)
            if ex is not None:
                ex.cancel()
            elif not self.repl.cancel(conn, cid):
                self.node.cancel(conn, cid)
        # Other kinds (a repeated welcome, future additions) are ignored.

    # ---- sending ----

    def send_res(self, conn, rid, result, body=b""):
        if conn is None or conn.closed:
            return
        rj = encode_header(result)
        if len(rj) <= MAX_HEADER - 64:
            conn.send_raw(b'{"t":"res","id":%d,"ok":true,"result":%s}' % (rid, rj), body)
        elif not body and len(rj) <= MAX_BODY:
            conn.send_raw(b'{"t":"res","id":%d,"ok":true,"result_in_body":true}' % rid, rj)
        else:
            self.send_error(conn, rid, "too_large", "the result of request %d is %d bytes, over the frame limits"
                            % (rid, len(rj)))

    def send_error(self, conn, rid, code, message):
        if conn is not None and not conn.closed:
            conn.send({"t": "res", "id": rid, "ok": False, "error": {"code": code, "message": str(message)[:4000]}})

    def send_event(self, conn, rid, kind, body=b"", extra=None, seq=0):
        if conn is None or conn.closed:
            return
        h = {"t": "ev", "id": rid, "kind": kind, "seq": seq}
        if extra:
            h.update(extra)
        conn.send(h, body)

    def exec_done(self, ex):
        if ex.conn is not None and ex.conn.execs.get(ex.id) is ex:
            del ex.conn.execs[ex.id]
        self.paused.discard(ex)

    def keep_result(self, tag, result):
        """An exec ended while no host was connected: keep its result for exec.results (bounded)."""
        if tag is None:
            return
        self.kept_results[tag] = result
        while len(self.kept_results) > MAX_KEPT_RESULTS:
            self.kept_results.popitem(last=False)

    # ---- commands ----

    def starting(self):
        """Execs whose command the spawner has not started yet."""
        return [ex for c in ([self.conn] if self.conn is not None else []) for ex in c.execs.values() if ex.pid is None]

    def exec_started(self, ex):
        self.exec_by_pid[ex.pid] = ex

    def _command_exited(self, pid, status):
        """The spawner reaped one of its commands."""
        ex = self.exec_by_pid.pop(pid, None)
        if ex is not None:
            ex.on_exit(status)

    def _start_exec(self, conn, rid, a):
        if self.restrict_error is not None:
            raise OpError("permission_denied", self.restrict_error)
        expected = a.get("spawner")
        if expected is not None and expected != self.spawner.pid:
            # The host placed another spawner in this exec's group: it died and was replaced meanwhile.
            raise OpError("stale", "the process that starts commands changed (pid %r, expected %r); prepare again"
                          % (self.spawner.pid, expected))
        conn.execs[rid] = Exec(self, conn, rid, a, self.base_env)

    def _spawner_pid(self):
        if self.restrict_error is not None:
            raise OpError("permission_denied", self.restrict_error)
        try:
            return self.spawner.ensure()
        except OSError as e:
            raise OpError("busy", "cannot start the process that starts commands (%s): the sandbox may be at its "
                          "process limit; end some of its processes and retry" % e.strerror)

    def _exec_results(self, a):
        tags = a.get("tags")
        if not isinstance(tags, list) or len(tags) > 4096 or not all(isinstance(t, str) for t in tags):
            raise OpError("bad_request", "exec.results needs tags: an array of at most 4096 strings")
        running = {ex.tag: ex.pid for ex in self.exec_by_pid.values() if ex.tag is not None and not ex.done}
        out = {"results": {}, "running": {}}
        for t in tags:
            if t in self.kept_results:
                out["results"][t] = self.kept_results.pop(t)
            elif t in running:
                out["running"][t] = running[t]
        return out

    # ---- operations ----

    def _request(self, conn, rid, op, a, body):
        handler = OPS.get(op)
        if handler is None:
            raise OpError("unknown_op", "unknown op %r (agent version %s)" % (op, AGENT_VERSION))
        handler(self, conn, rid, a, body)

    # ---- the ops (OPS, below the class, names them): each is (self, conn, rid, args, body) ----

    def _op_ping(self, conn, rid, a, body):
        self.send_res(conn, rid, {"pong": True, "pid": os.getpid(), "time_ns": time.time_ns()})

    def _op_exec(self, conn, rid, a, body):
        self._start_exec(conn, rid, a)

    def _op_exec_spawner(self, conn, rid, a, body):
        self.send_res(conn, rid, {"pid": self._spawner_pid()})

    def _op_exec_results(self, conn, rid, a, body):
        self.send_res(conn, rid, self._exec_results(a))

    def _op_exec_stdin(self, conn, rid, a, body):
        self._find_exec(conn, a).write_stdin(rid, body, a.get("eof"))

    def _op_exec_resize(self, conn, rid, a, body):
        self._find_exec(conn, a).resize(check_size(a))
        self.send_res(conn, rid, {})

    def _op_exec_signal(self, conn, rid, a, body):
        sig = a.get("signal")
        if not isinstance(sig, int) or isinstance(sig, bool) or not 1 <= sig <= 64:
            raise OpError("bad_request", "signal must be an integer from 1 to 64")
        self._find_exec(conn, a).kill_group(sig)
        self.send_res(conn, rid, {})

    def _op_repl_eval(self, conn, rid, a, body):
        language = a.get("language", "python")
        if language not in ("python", "node"):
            raise OpError("bad_request", "language must be python or node")
        if sysc.ON_RUNTIME and language == "python":
            # The image has no python3: the worker runs on forkbox's own runtime, which is for the
            # agent alone, so it never runs user code. (Node, exec'd from the image with the
            # commands' restrictions, is the image's own.)
            raise OpError("no_python", "this sandbox's image has no python3, so it has no Python REPL: "
                          "run commands with exec, or use an image with python3")
        code = a.get("code")
        if not isinstance(code, str):
            raise OpError("bad_request", "repl.eval needs code (a string)")
        output_id = a.get("output_id")
        if output_id is not None and not valid_output_id(output_id):
            raise OpError("bad_request", "output_id must match [A-Za-z0-9_.-]{1,64}")
        args = {"code": code,
                "max_output_bytes": _int_arg(a, "max_output_bytes", DEFAULT_MAX_OUTPUT, MAX_OUTPUT_LIMIT),
                "output_id": output_id,
                "spool_bytes": _int_arg(a, "spool_bytes", 0, MAX_SPOOL_BYTES) if output_id else 0}
        (self.node if language == "node" else self.repl).submit(conn, rid, "eval", args,
                                                                 _int_arg(a, "timeout_ms", 0))

    def _op_repl_interrupt(self, conn, rid, a, body):
        self.repl.interrupt()
        self.node.interrupt()
        self.send_res(conn, rid, {})

    def _op_repl_restart(self, conn, rid, a, body):
        self.node.restart("restart requested")  # ends the Node process; the next use starts a fresh one
        self.repl.restart("restart requested")
        w = self.repl.worker
        self.send_res(conn, rid, {"worker_pid": w.pid if w is not None else None})

    def _op_fork(self, conn, rid, a, body):
        children = a.get("children")
        if not isinstance(children, list) or not children or not all(
                isinstance(c, dict) and isinstance(c.get("sandbox_id"), str) for c in children):
            raise OpError("bad_request", "fork needs children: a non-empty array of objects with a sandbox_id")
        if a.get("wait") is False and (self.repl.busy() or self.repl.queue):
            raise OpError("busy", "the REPL is running code; wait for it or interrupt it, then fork")
        self.repl.submit(conn, rid, "fork", {"children": children})

    def _op_tree(self, conn, rid, a, body):
        r = self.trees.op(a)
        if r is None:
            raise OpError("bad_request", "tree must be a string of 1 to 128 characters")
        self.send_res(conn, rid, r)

    def _op_hold(self, conn, rid, a, body):
        max_ms = _int_arg(a, "max_ms", 30000, holding.MAX_HOLD_MS)
        if max_ms < holding.MIN_HOLD_MS:
            raise OpError("bad_request", "max_ms must be at least %d" % holding.MIN_HOLD_MS)
        self.send_res(conn, rid, {})
        self.hold.start(conn, max_ms)

    def _op_stats(self, conn, rid, a, body):
        self.send_res(conn, rid, self._stats())

    def _op_port_connect(self, conn, rid, a, body):
        self.portrelay.connect(a)
        self.send_res(conn, rid, {})

    def _find_exec(self, conn, a):
        ex = conn.execs.get(a.get("exec_id"))
        if ex is None:
            raise OpError("not_found", "no running exec with id %r on this connection" % (a.get("exec_id"),))
        return ex

    def _stats(self):
        try:
            procs = sum(1 for n in os.listdir("/proc") if n.isdigit())
        except OSError:
            procs = 0
        w = self.repl.worker
        return {
            "processes": procs,
            "load": list(os.getloadavg()),
            "uptime_s": time.monotonic() - self.t0,
            "worker_pid": w.pid if w is not None else None,
            "repl_busy": self.repl.busy(),
            "bounds": bounds.as_dict(),
        }


def _exit_how(status):
    if os.WIFSIGNALED(status):
        return "killed by signal %d" % os.WTERMSIG(status)
    return "it exited with code %d" % os.WEXITSTATUS(status)


def hello_header(role, sandbox_id, nonce, worker_pid, reconnect):
    return {
        "t": "hello",
        "v": PROTOCOL_VERSION,
        "role": role,
        "sandbox_id": sandbox_id,
        "nonce": nonce,
        "agent_version": AGENT_VERSION,
        "worker_pid": worker_pid,
        "reconnect": reconnect,
    }


def greet_host(spec):
    """Called by forking.fork_children in a new sandbox's PID 1 right after it was cloned, before any of
    its set-up: say hello on the sandbox's control socket (seen through the source's inbox, at
    spec["inbox"]) and wait for the welcome. The host moves this process into the new sandbox's cgroups
    before it welcomes it, so the set-up that follows (namespaces, mounts, this agent) is charged to the
    new sandbox's memory and CPU limits, not to the source's. Returns the welcomed socket, which the
    agent keeps as its host connection (become_child), and a function that reports a failed set-up on it
    instead."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(GREET_TIMEOUT_S)
        s.connect(spec["inbox"].rstrip("/") + "/ctl.sock")
        send_frame(s, hello_header("sandbox", str(spec["sandbox_id"]), str(spec.get("nonce") or ""), None, False))
        frame = recv_frame(s)
        if frame is None or frame[0].get("t") != "welcome":
            raise OSError("the host did not welcome sandbox %s (%s)"
                          % (spec["sandbox_id"], "connection closed" if frame is None else frame[0].get("t")))
        s.settimeout(None)
        return s, lambda message: report_setup_failure(s, message)
    except BaseException:
        s.close()
        raise


def report_setup_failure(sock, message):
    """A new sandbox's set-up failed after greet_host: answer the host's readiness ping (the request it
    sends right after its welcome) with the error, so the fork says why this child failed."""
    try:
        sock.settimeout(5.0)
        frame = recv_frame(sock)
        rid = frame[0].get("id") if frame is not None else None
        if isinstance(rid, int) and not isinstance(rid, bool) and rid > 0:
            send_frame(sock, {"t": "res", "id": rid, "ok": False,
                              "error": {"code": "internal", "message": str(message)[:4000]}})
    except Exception:  # OSError, a malformed frame: the host then reports the closed connection
        pass


def become_child(spec, worker, host_sock=None):
    """Called by forking.fork_children in PID 1 of a new sandbox's pid namespace (a copy of the source's
    worker, user state included). Turn this process into the sandbox's agent; the worker is forked off it
    when Python is first needed. `host_sock` is the connection greet_host opened (None: connect and say
    hello now). Never returns."""
    env = os.environ
    # A forked sandbox talks to its own inbox's socket, unless the host names another one in the child's env.
    env.pop("FORKBOX_CTL_SOCKET", None)
    extra = spec.get("env")
    if isinstance(extra, dict):
        env.update({k: v for k, v in extra.items() if isinstance(k, str) and isinstance(v, str)})
    env["FORKBOX_SANDBOX_ID"] = str(spec.get("sandbox_id", ""))
    env["FORKBOX_NONCE"] = str(spec.get("nonce") or "")
    parent = spec.get("parent_id") or worker.fork_source_id
    if parent:
        env["FORKBOX_PARENT_ID"] = str(parent)
    else:
        env.pop("FORKBOX_PARENT_ID", None)  # forked from a template: no parent sandbox
    if "fork_index" in spec:
        env["FORKBOX_FORK_INDEX"] = str(spec["fork_index"])
    env["FORKBOX_ROLE"] = "sandbox"
    # An `allow` network policy: the agent relays this loopback port to the daemon's egress proxy, and
    # every process gets the proxy variables (before Agent() copies the environment for commands).
    net_port = spec.get("net_relay_port")
    if not (isinstance(net_port, int) and not isinstance(net_port, bool) and 0 < net_port < 65536):
        net_port = None
    else:
        env.update(proxy_env(net_port))
    rank = spec.get("oom_score_adj")
    if isinstance(rank, int) and not isinstance(rank, bool) and -1000 <= rank <= 1000:
        sysc.OOM_RANK = rank
    try:
        # Leave the source worker's session and process group: the source agent signals that group (SIGINT
        # on an eval timeout, SIGKILL on a worker restart) and must never hit this sandbox's agent.
        os.setsid()
    except OSError:
        pass
    if worker.sock is not None:
        try:
            worker.sock.close()  # our copy of the source worker's link to the source agent
        except OSError:
            pass
        worker.sock = None
    worker.running = False
    # No gc.collect() here: it would write to every object's header and copy every page shared with the
    # source. Keep everything frozen (forking froze it before fork()) so the cycle collector never visits
    # the user's objects: pages stay shared, and no user object is ever finalized in the agent (which
    # could close an fd number the agent reuses).
    gc.freeze()
    _null_std_fds()
    Agent(adopt=worker, host_sock=host_sock, net_port=net_port).run()
    os._exit(70)


def _null_std_fds():
    """fds 0-2 become /dev/null. What the runtime gave us there (runc's stdio: the host's container.log)
    must never be reachable by anything in the sandbox, which inherits them; and a socket must never land
    on them (a stray print would write into the host protocol). Diagnostics go out as `log` frames."""
    nfd = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        if nfd != fd:
            os.dup2(nfd, fd)
    if nfd > 2:
        os.close(nfd)


def _file_op(handler):
    """A file op (fileops.py, filerw.py: (args, body) -> (result, body)) as an agent op."""
    def op(agent, conn, rid, a, body):
        result, rbody = handler(a, body)
        agent.send_res(conn, rid, result, rbody)
    return op


# Every op the agent answers, by name: the one table _request looks in (docs/AGENT-PROTOCOL.md,
# "Operations"; test/unit/agent-protocol-doc.test.ts holds the two to each other).
OPS = {
    "ping": Agent._op_ping,
    "stats": Agent._op_stats,
    "exec": Agent._op_exec,
    "exec.spawner": Agent._op_exec_spawner,
    "exec.results": Agent._op_exec_results,
    "exec.stdin": Agent._op_exec_stdin,
    "exec.resize": Agent._op_exec_resize,
    "exec.signal": Agent._op_exec_signal,
    "repl.eval": Agent._op_repl_eval,
    "repl.interrupt": Agent._op_repl_interrupt,
    "repl.restart": Agent._op_repl_restart,
    "fork": Agent._op_fork,
    "port.connect": Agent._op_port_connect,
    "hold": Agent._op_hold,
    "tree": Agent._op_tree,
    "file.read": _file_op(filerw.file_read),
    "file.write": _file_op(filerw.file_write),
    "file.list": _file_op(fileops.file_list),
    "file.stat": _file_op(fileops.file_stat),
    "file.delete": _file_op(fileops.file_delete),
    "file.mkdir": _file_op(fileops.file_mkdir),
    "file.move": _file_op(fileops.file_move),
}


def main():
    _null_std_fds()
    os.chdir("/")
    try:
        # No core dumps of anything in the sandbox (lowering a limit needs no privilege).
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (OSError, ValueError) as e:
        log("cannot turn core dumps off: %s" % e)
    restrict_error = None
    try:
        sysc.restrict_agent()
    except OSError as e:
        restrict_error = ("the agent cannot drop CAP_SYS_ADMIN/CAP_NET_ADMIN/CAP_SYS_CHROOT from the bounding "
                          "set for commands (%s); give the template CAP_SETPCAP" % e)
        log(restrict_error)
    try:
        sysc.set_child_subreaper()
    except OSError as e:
        log("cannot become a child subreaper: %s" % e)
    Agent(restrict_error=restrict_error).run()


if __name__ == "__main__":
    main()
