"""The agent's side of the REPL worker: the queue of evals/forks, timeouts, interrupts, restarts.
Standard library only, Python >= 3.8.
"""

import collections
import json
import os
import signal
import time

import bounds
from channel import log
from replout import EvalOutput, Lingering

DEFAULT_MAX_OUTPUT = bounds.DEFAULT_OUTPUT_BYTES
MAX_OUTPUT_LIMIT = bounds.OUTPUT_BYTES  # per stream: what the host keeps inline per call
MAX_SPOOL_BYTES = bounds.SPOOL_BYTES  # per stream, in the spool file inside the sandbox
INTERRUPT_GRACE_S = 2.0
START_GRACE_S = 10.0  # an interrupt asked for before the code started: restart if it never starts


class Item:
    """One queued repl.eval or fork request."""

    __slots__ = ("conn", "id", "kind", "args", "wid", "timeout_ms", "timed_out", "interrupted", "cancelled",
                 "timers", "t0", "out", "started", "sigint_pending", "escalate")

    def __init__(self, conn, req_id, kind, args, wid, timeout_ms=0):
        self.conn, self.id, self.kind, self.args, self.wid = conn, req_id, kind, args, wid
        self.timeout_ms = timeout_ms
        self.timed_out = self.interrupted = self.cancelled = False
        self.timers = []
        self.t0 = time.monotonic()
        self.out = None  # EvalOutput: the eval's stdout/stderr pipes, read by the agent
        self.started = False  # the worker said the code runs (a SIGINT now raises KeyboardInterrupt in it)
        self.sigint_pending = False  # an interrupt asked for before that: sent on `started`
        self.escalate = False  # a restart follows the SIGINT if the code does not stop (timeout, cancel)


class WorkerHandle:
    __slots__ = ("pid", "channel", "current", "started")

    def __init__(self, pid, channel):
        self.pid, self.channel, self.current, self.started = pid, channel, None, time.monotonic()


def _signal_group(pid, sig):
    for f in (os.killpg, os.kill):
        try:
            f(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _lost_result(item, reason, what="Python worker"):
    return {
        "ok": False,
        "value": None,
        "stdout": "",
        "stderr": "",
        "error": {
            "type": "WorkerRestarted",
            "message": "the %s was killed and restarted (%s); all REPL state was lost" % (what, reason),
            "traceback": "",
        },
        "timed_out": item.timed_out,
        "interrupted": item.timed_out or item.interrupted,
        "cancelled": item.cancelled,
        "restarted": True,
        "truncated": False,
        "images": [],
        "duration_ms": (time.monotonic() - item.t0) * 1000.0,
    }


class Repl:
    """Owns the worker process handle and the request queue. `agent` provides loop, send_res, send_error,
    spawn_worker() -> WorkerHandle, shutting_down."""

    WHAT = "Python worker"  # in the message of a result whose worker was lost

    def __init__(self, agent):
        self.agent = agent
        self.worker = None
        # A forked sandbox's user state (a Worker object in this process's memory, copied from the source)
        # until something needs Python: only then is the worker forked off it. An idle child of a fork
        # is then one process, and a fork of N children costs N copies of the source's memory, not 2N.
        self.deferred = None
        self.queue = collections.deque()
        self._wid = 0
        self._starts = collections.deque(maxlen=5)
        self._start_timer = None
        self.lingering = Lingering()  # pipes of finished evals a background process still writes to
        # The worker was restarted and no caller has been told: its eval was cancelled (the caller went
        # away before the answer) or it died between evals. The next answered eval says restarted=True.
        self.untold_restart = False

    # ---- requests ----

    def submit(self, conn, req_id, kind, args, timeout_ms=0):
        self._wid += 1
        self.queue.append(Item(conn, req_id, kind, args, self._wid, timeout_ms))
        if self.worker is None and self.deferred is not None and not self.agent.shutting_down:
            adopt, self.deferred = self.deferred, None
            self.start(adopt=adopt)
        self._pump()

    def defer(self, adopt):
        """Keep `adopt` (the user state) and fork the worker off it when the first eval or fork comes."""
        self.deferred = adopt

    def busy(self):
        return self.worker is not None and self.worker.current is not None

    def interrupt(self):
        w = self.worker
        if w is not None and w.current is not None and w.current.kind == "eval":
            w.current.interrupted = True
            self._sigint(w.current, escalate=False)

    def _sigint(self, item, escalate=True):
        """SIGINT to the worker's group for `item`, then a restart if it has not answered INTERRUPT_GRACE_S
        later. Before the worker said the code started, a SIGINT would be ignored (or hit the worker's
        own loop): it is held until then, with a longer deadline in case the code never starts."""
        w = self.worker
        if w is None or w.current is not item:
            return
        if escalate and not item.escalate:
            item.escalate = True
            grace = INTERRUPT_GRACE_S if item.started else START_GRACE_S
            item.timers.append(self.agent.loop.add_timer(grace, lambda: self._kill_if_stuck(item)))
        if not item.started:
            item.sigint_pending = True
            return
        _signal_group(w.pid, signal.SIGINT)

    def cancel(self, conn, req_id):
        """Cancel of a running eval: SIGINT (KeyboardInterrupt, state kept), then, if the worker has not
        answered INTERRUPT_GRACE_S later, a restart (state lost; the result says so)."""
        w = self.worker
        if w is not None and w.current is not None and w.current.conn is conn and w.current.id == req_id:
            item = w.current
            if item.kind == "eval" and not item.cancelled:
                item.cancelled = True
                item.interrupted = True
                self._sigint(item)
            return True
        for item in self.queue:
            if item.conn is conn and item.id == req_id:
                self.queue.remove(item)
                if item.kind == "eval":
                    r = _lost_result(item, "")
                    r.update(restarted=False, interrupted=True, cancelled=True, error={
                        "type": "Cancelled", "message": "cancelled before it started", "traceback": ""})
                    self.agent.send_res(conn, req_id, r)
                else:
                    self.agent.send_error(conn, req_id, "internal", "fork cancelled before it started")
                return True
        return False

    def drop_conn(self, conn):
        """The host connection is gone: its queued requests are abandoned (their results would be lost)."""
        self.queue = collections.deque(i for i in self.queue if i.conn is not conn)

    # ---- worker lifecycle ----

    def start(self, adopt=None):
        now = time.monotonic()
        if adopt is None and len(self._starts) == self._starts.maxlen and now - self._starts[0] < 5.0:
            # The worker keeps dying at once (broken prewarm, OOM at start): do not spin on fork().
            if self._start_timer is None:
                log("REPL worker restarting too often; waiting 1 s")
                self._start_timer = self.agent.loop.add_timer(1.0, self._delayed_start)
            return
        self._starts.append(now)
        self.worker = self.agent.spawn_worker(adopt)
        self._pump()

    def _delayed_start(self):
        self._start_timer = None
        self._starts.clear()
        if self.worker is None and not self.agent.shutting_down:
            self.start()

    def restart(self, reason):
        self.deferred = None  # a restart drops the user state, forked or not
        self.lost(reason)
        self.untold_restart = False  # asked for (code_reset): its caller knows
        if self.worker is None and self._start_timer is None and not self.agent.shutting_down:
            self.start()

    def lost(self, reason, pid=None):
        """The worker died, misbehaved or must go: kill its group, answer its request, start a fresh one."""
        w = self.worker
        if w is None or (pid is not None and pid != w.pid):
            return
        self.worker = None
        w.channel.on_close = None
        w.channel.close()
        _signal_group(w.pid, signal.SIGKILL)
        self.agent.doomed.add(w.pid)
        item = w.current
        if item is not None:
            for t in item.timers:
                t.cancel()
            if item.kind == "eval":
                self._answer(item, _lost_result(item, reason, self.WHAT))
            else:
                self.agent.send_error(item.conn, item.id, "internal", "the REPL worker died during the fork: %s" % reason)
        if item is None or item.cancelled:
            self.untold_restart = True
        self._after_loss(w)
        if not self.agent.shutting_down:
            self.start()

    def _after_loss(self, handle):
        """Hook: the lost worker's handle, once its request is answered."""

    def on_channel_close(self, ch, reason):
        if self.worker is not None and self.worker.channel is ch:
            self.lost("its channel closed: %s" % reason)

    # ---- traffic ----

    def _pump(self):
        w = self.worker
        if w is None or w.current is not None or not self.queue:
            return
        item = self.queue.popleft()
        if item.kind == "eval":
            a = item.args
            try:
                item.out = EvalOutput(self.agent, item.conn, item.id, a["max_output_bytes"], a.get("output_id"),
                                      a.get("spool_bytes", 0))
            except OSError as e:  # out of fds: answer this one, keep the worker
                self.agent.send_error(item.conn, item.id, "internal", "cannot capture the output: %s" % e)
                self._pump()
                return
            w.current = item
            # The write ends of the two pipes go to the worker with the request; it puts them on fds 1 and 2.
            w.channel.send_with_fds({"t": "eval", "id": item.wid, "code": a["code"],
                                     "max_output_bytes": a["max_output_bytes"]},
                                    item.out.worker_fds, item.out.release_worker_fds)
            if item.timeout_ms:
                item.timers.append(self.agent.loop.add_timer(item.timeout_ms / 1000.0, lambda: self._timeout(item)))
        else:
            w.current = item
            node = getattr(self.agent, "node", None)
            w.channel.send({"t": "fork", "id": item.wid, "children": item.args["children"],
                            "node_state": node is not None and node.had_state()})

    def _answer(self, item, result):
        """Answer an eval once its output is read to the end: the tails, then the result with the output's
        totals and spool files. stdout/stderr travel as events only (replout.py)."""
        out, item.out = item.out, None
        result["stdout"] = result["stderr"] = ""
        if not item.cancelled and self.untold_restart:
            # State was lost since this caller's previous answer: say so now (ok and value stand).
            result["restarted"] = True
            self.untold_restart = False
        if out is None:
            self.agent.send_res(item.conn, item.id, result)
            return

        def done(fields):
            cut = bool(result.get("truncated"))  # the worker cut the value's repr
            result.update(fields)
            result["truncated"] = cut or bool(fields.get("truncated"))
            self.agent.send_res(item.conn, item.id, result)

        out.release_worker_fds()  # not sent yet (the worker died first): the pipes must reach EOF
        out.finish(done)

    def _timeout(self, item):
        w = self.worker
        if w is None or w.current is not item:
            return
        item.timed_out = True
        self._sigint(item)

    def _kill_if_stuck(self, item):
        if self.worker is not None and self.worker.current is item:
            self.lost("it did not stop within %d s of SIGINT" % INTERRUPT_GRACE_S)

    def on_frame(self, ch, header, body):
        w = self.worker
        if w is None or w.channel is not ch:
            return
        if header.get("t") == "log":  # from the worker, so from the user: a field of a rate-limited line
            log("REPL worker: %s" % (str(header.get("msg"))[:2000],), "warn")
            return
        item = w.current
        if header.get("t") == "started" and item is not None and item.kind == "eval" and header.get("id") == item.wid:
            if not item.started:
                item.started = True
                if item.sigint_pending:
                    self._sigint(item, escalate=False)
                    if item.escalate:  # the restart deadline counts from the SIGINT now sent
                        item.timers.append(self.agent.loop.add_timer(INTERRUPT_GRACE_S,
                                                                     lambda: self._kill_if_stuck(item)))
            return
        if header.get("t") != "result" or item is None or header.get("id") != item.wid:
            self.lost("it sent an unexpected message")
            return
        try:
            result = json.loads(body.decode("utf-8"))
            if not isinstance(result, dict):
                raise ValueError("not an object")
        except ValueError as e:
            self.lost("it sent a malformed result: %s" % e)
            return
        for t in item.timers:
            t.cancel()
        w.current = None
        if item.kind == "eval":
            result["timed_out"] = item.timed_out
            result["interrupted"] = bool(result.get("interrupted")) or (
                (item.timed_out or item.cancelled) and not result.get("ok"))
            result["cancelled"] = item.cancelled
            result["restarted"] = False
            self._answer(item, result)
        elif "error" in result:
            self.agent.send_error(item.conn, item.id, "internal", "fork failed: %s" % result["error"])
        else:
            self.agent.send_res(item.conn, item.id, result)
        self._pump()
