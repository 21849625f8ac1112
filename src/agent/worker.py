"""The persistent Python REPL worker. Standard library only, Python >= 3.8.

It is forked from the agent (so it has the agent's code in memory and can perform a fork of the sandbox)
and talks to it over a socketpair with the same framing as the host protocol:

  agent -> worker  {t: "eval", id, code, max_output_bytes}      -> {t: "result", id} + body = JSON result
                   + 2 fds (SCM_RIGHTS): write ends of the eval's stdout and stderr pipes (replout.py)
  agent -> worker  {t: "fork", id, children}                     -> {t: "result", id} + body = JSON result
  worker -> agent  {t: "started", id}  (the cell's code runs now: SIGINT interrupts it from here on)
  worker -> agent  {t: "log", msg}  (start-up diagnostics; the agent logs them, rate-limited)

This process runs user code: everything here is best effort against a user who can rewrite it at will;
the agent treats the worker as untrusted too.
"""

import ast
import base64
import builtins
import io
import json
import linecache
import os
import signal
import sys
import time
import traceback

from protocol import MAX_BODY, close_fds, recv_frame_fds, send_frame

_THIS_FILE = os.path.abspath(__file__)
_LINECACHE_KEEP = 500


def _strip_worker_frames(te, seen):
    # Frames of this file are the worker's machinery (the eval loop, the SIGINT handler), not the user's
    # code: hide them from tracebacks, in chained exceptions too.
    while te is not None and id(te) not in seen:
        seen.add(id(te))
        te.stack = traceback.StackSummary.from_list(
            [f for f in te.stack if os.path.abspath(f.filename) != _THIS_FILE])
        _strip_worker_frames(te.__context__, seen)
        te = te.__cause__


def _error_of(e):
    try:
        te = traceback.TracebackException(type(e), e, e.__traceback__)
        _strip_worker_frames(te, set())
        text = "".join(te.format())
    except BaseException:
        text = "".join(traceback.format_exception_only(type(e), e))
    try:
        message = str(e)
    except BaseException:
        message = "<unprintable %s>" % type(e).__name__
    return {"type": type(e).__name__, "message": message, "traceback": text}


def _collect_figures():
    """Open matplotlib figures as PNGs, then close them; only when the user's code loaded pyplot."""
    if "matplotlib" not in sys.modules:
        return []
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    images = []
    try:
        for num in plt.get_fignums():
            buf = io.BytesIO()
            plt.figure(num).savefig(buf, format="png", bbox_inches="tight")
            images.append({"mime": "image/png", "data_b64": base64.b64encode(buf.getvalue()).decode("ascii")})
        plt.close("all")
    except Exception as e:  # a broken figure must not cost the user the eval's result
        print("forkbox: could not render a matplotlib figure: %r" % (e,), file=sys.stderr)
    return images


def _flush_std():
    for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if s is not None:
                s.flush()
        except BaseException:
            pass


class Worker:
    """One REPL: a globals dict, and the loop that serves the agent's eval and fork requests."""

    def __init__(self, become_child=None, greet=None):
        self.globals = {"__name__": "__main__", "__builtins__": builtins, "__doc__": None}
        self.sock = None
        self.running = False  # True only while user code runs: SIGINT raises KeyboardInterrupt only then
        self.counter = 0
        self._become_child = become_child
        self._greet = greet
        self.fork_source_id = None  # the sandbox a forked child came from (FORKBOX_PARENT_ID)
        self.node_state = False  # see serve(): "fork"
        self.notes = []  # start-up diagnostics for the agent's log (bounded: one per prewarm module)

    # ---- process set-up ----

    def setup_process(self):
        """Called in the freshly forked worker process (from a fresh start or after a sandbox fork)."""
        try:
            signal.set_wakeup_fd(-1)
        except (ValueError, OSError):
            pass
        signal.signal(signal.SIGINT, self._on_sigint)
        for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        # Own process group: the agent's timeout SIGINT goes to the group, so a blocking subprocess started
        # from the REPL (os.system, subprocess.run) is interrupted too, like Ctrl-C in a terminal.
        try:
            os.setsid()
        except OSError:
            pass
        # input() must fail fast instead of waiting forever on the agent's stdin.
        fd = os.open("/dev/null", os.O_RDONLY)
        if fd != 0:
            os.dup2(fd, 0)
            os.close(fd)
        os.environ.setdefault("MPLBACKEND", "Agg")  # figures render off-screen; we collect them as PNG
        try:
            os.chdir(os.environ.get("FORKBOX_REPL_CWD", "/"))
        except OSError:
            pass

    def _on_sigint(self, signum, frame):
        if self.running:
            raise KeyboardInterrupt

    def prewarm(self):
        names = [n.strip() for n in os.environ.get("FORKBOX_PREWARM", "").split(",") if n.strip()]
        for name in names:
            try:
                __import__(name)
            except BaseException as e:
                # Sent to the agent's log once serving (the worker's stderr is /dev/null between evals).
                self.notes.append("prewarm import of %r failed: %r" % (name, e))

    # ---- serving ----

    def serve(self, sock):
        """Serve the agent on `sock` until it closes. Never returns: the process exits."""
        self.sock = sock
        code = 0
        try:
            notes, self.notes = self.notes[:32], []
            for note in notes:
                send_frame(sock, {"t": "log", "msg": note[:2000]})
            while True:
                frame = recv_frame_fds(sock)
                if frame is None:
                    break
                header, _body, fds = frame
                t = header.get("t")
                if t == "eval" and len(fds) == 2:
                    result = self.eval(header.get("code"), header.get("max_output_bytes"), fds, header.get("id"))
                elif t == "eval":
                    close_fds(fds)
                    result = {"error": "eval without its two output pipes"}
                elif t == "fork":
                    close_fds(fds)
                    # The source's Node REPL had state, which a fork cannot carry (noderepl.py): the
                    # children's agents say so on their first Node answer.
                    self.node_state = header.get("node_state") is True
                    result = self.fork(header.get("children"))
                else:
                    close_fds(fds)
                    result = {"error": "unknown worker request %r" % (t,)}
                send_frame(sock, {"t": "result", "id": header.get("id")}, self._encode_result(result))
        except BaseException:
            code = 1
            try:
                traceback.print_exc()
            except BaseException:
                pass
        os._exit(code)

    @staticmethod
    def _encode_result(result):
        body = json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")
        if len(body) > MAX_BODY - 4096:
            # Only huge figures or huge escaped output get here: keep the answer, lose the bulk.
            result["images"] = []
            for k in ("stdout", "stderr", "value"):
                if isinstance(result.get(k), str):
                    result[k] = result[k][: 1 << 20]
            result["truncated"] = True
            body = json.dumps(result, separators=(",", ":")).encode("utf-8", "replace")
        return body

    def fork(self, children):
        try:
            import forking  # lazily: only sandboxes that fork need it
        except ImportError as e:
            return {"error": "fork support is not installed: %s" % e}

        if not isinstance(children, list):
            return {"error": "children must be a list"}
        if self._greet is None or self._become_child is None:
            return {"error": "this worker was started without the agent's fork hooks"}
        # Read before forking: forking rewrites FORKBOX_SANDBOX_ID in each child before become_child runs.
        source = os.environ.get("FORKBOX_SANDBOX_ID") if os.environ.get("FORKBOX_ROLE") != "template" else None
        self.fork_source_id = source
        skip = (self.sock.fileno(),) if self.sock is not None else ()
        try:
            return {"children": forking.fork_children(children, self._become, self._greet, skip)}
        except Exception as e:
            return {"error": "%s: %s" % (type(e).__name__, e), "traceback": traceback.format_exc()}

    def _become(self, spec, host_sock=None, failed=None):
        if self._become_child is None:
            os._exit(70)
        try:
            self._become_child(spec, self, host_sock)
        except BaseException as e:
            # Said to the host (its readiness ping's answer) rather than lost: the fork reports why.
            if failed is not None:
                failed("the new sandbox's agent did not start: %s: %s\n%s"
                       % (type(e).__name__, e, traceback.format_exc()[-1500:]))
        finally:
            os._exit(70)  # become_child never returns; if it does, this child is broken: end it

    # ---- eval ----

    def eval(self, code, max_output_bytes, out_fds, eval_id=None):
        """Run one cell with fds 1 and 2 on `out_fds` (the write ends of the agent's pipes), then put back
        what was there and close them: the agent reads the output as it comes, bounded (replout.py)."""
        t0 = time.monotonic()
        if not isinstance(code, str):
            code = ""
        cap = max_output_bytes if isinstance(max_output_bytes, int) and max_output_bytes >= 0 else 1 << 20
        _flush_std()
        saved = []
        for target, fd in zip((1, 2), out_fds):
            try:
                saved.append(os.dup(target))
            except OSError:
                saved.append(None)
            os.dup2(fd, target)
        close_fds(out_fds)
        value = error = None
        interrupted = False
        images = []
        try:
            try:
                value, error, interrupted = self._execute(code, cap, eval_id)
            except KeyboardInterrupt as e:  # SIGINT landed just outside the user's code
                error, interrupted = _error_of(e), True
            images = _collect_figures()
        finally:
            _flush_std()
            for target, fd in zip((1, 2), saved):
                if fd is None:
                    os.close(target)
                else:
                    os.dup2(fd, target)
                    os.close(fd)
        return {
            "ok": error is None,
            "value": value,
            "error": error,
            "timed_out": False,
            "interrupted": interrupted,
            "restarted": False,
            "truncated": value is not None and len(value) > cap,
            "images": images,
            "duration_ms": (time.monotonic() - t0) * 1000.0,
        }

    def _execute(self, code, cap, eval_id=None):
        """Run `code` in the globals; returns (repr of trailing expression or None, error or None, interrupted)."""
        self.counter += 1
        filename = "<repl-%d>" % self.counter
        g = self.globals
        try:
            tree = ast.parse(code, filename, "exec")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                # Like Jupyter: the value of a trailing expression is the cell's value.
                last = ast.Expression(tree.body.pop().value)
            body = compile(tree, filename, "exec")
            expr = compile(last, filename, "eval") if last is not None else None
        except BaseException as e:
            return None, _error_of(e), isinstance(e, KeyboardInterrupt)
        # Tracebacks show the source lines of the cell.
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        linecache.cache.pop("<repl-%d>" % (self.counter - _LINECACHE_KEEP), None)
        result = None
        self.running = True
        try:
            # From here a SIGINT raises KeyboardInterrupt in the cell: the agent holds its interrupts (cancel,
            # timeout) until it has this, so none is lost in the gap before the code runs.
            send_frame(self.sock, {"t": "started", "id": eval_id})
            exec(body, g)
            if expr is not None:
                result = eval(expr, g)
        except BaseException as e:  # SystemExit and KeyboardInterrupt included: the worker must survive
            self.running = False
            return None, _error_of(e), isinstance(e, KeyboardInterrupt)
        finally:
            self.running = False
        if result is None:
            return None, None, False
        g["_"] = result
        try:
            text = repr(result)
        except BaseException as e:
            text = "<repr failed: %s: %s>" % (type(e).__name__, e)
        if len(text) > cap:
            text = text[:cap] + "..."  # len > cap tells eval() it was cut
        return text, None, False
