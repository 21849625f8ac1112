"""Holding for a checkpoint (the gvisor runtime; docs/AGENT-PROTOCOL.md, "hold").

gVisor cannot save a sandbox that holds a connection to a host socket, so before `runsc checkpoint` the
host asks the agent to `hold`: it answers, then closes its host connection and every relayed connection
(published ports, egress), and makes no new one until it is woken. The host wakes it with SIGUSR2 (the
source, once its checkpoint is written, and each sandbox restored from it), or it wakes on its own after
`max_ms`. A restored sandbox finds its own identity in `identity.json` in its inbox (written by the host
before the wake): its id, nonce and environment. The file is read once and removed."""

import json
import os
import time

from channel import log

IDENTITY_FILE = "identity.json"
IDENTITY_MAX_BYTES = 65536
MIN_HOLD_MS, MAX_HOLD_MS = 100, 120000


class Hold:
    def __init__(self, agent):
        self.agent = agent
        self.until = None  # monotonic deadline while held, else None
        self.conn = None  # the connection to close once its answer is out

    @property
    def held(self):
        return self.until is not None

    def start(self, conn, max_ms):
        """Held from now: `conn` is closed as soon as the answer to `hold` has left."""
        a = self.agent
        self.until = time.monotonic() + max_ms / 1000.0
        a.portrelay.close_all()
        if a.netrelay is not None:
            a.netrelay.close_all()
        self.conn = conn
        a.add_timer(max_ms / 1000.0, self._expired)
        self.drained(conn)

    def drained(self, conn):
        """The connection's queue emptied (or may have): close it once the answer is out."""
        if self.conn is conn and conn.pending == 0:
            self.conn = None
            conn.close("held for a checkpoint")

    def _expired(self):
        if self.held and time.monotonic() >= self.until:
            log("not woken within the hold; reconnecting", "warn")
            self.wake()

    def wake(self):
        """SIGUSR2 (or the hold's end): take a new identity if the host left one, then reconnect."""
        if not self.held:
            return
        self.until = None
        a = self.agent
        if self.conn is not None:
            c, self.conn = self.conn, None
            c.close("held for a checkpoint")
        self._take_identity()
        if a.conn is None:
            a.backoff_reset()
            a.connect_now()

    def _take_identity(self):
        a = self.agent
        path = os.path.join(os.path.dirname(a.ctl_path), IDENTITY_FILE)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return
        except OSError as e:
            log("cannot open %s: %s" % (path, e), "warn")
            return
        try:
            raw = os.read(fd, IDENTITY_MAX_BYTES + 1)
        finally:
            os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass
        try:
            ident = json.loads(raw.decode("utf-8")) if len(raw) <= IDENTITY_MAX_BYTES else None
        except ValueError:
            ident = None
        if not isinstance(ident, dict) or not isinstance(ident.get("sandbox_id"), str):
            log("ignoring a malformed %s" % path, "warn")
            return
        apply_identity(a, ident)


def apply_identity(a, ident):
    """A restored sandbox becomes itself: its id and nonce (its hello), and what new processes see."""
    a.sandbox_id = ident["sandbox_id"]
    nonce = ident.get("nonce")
    a.nonce = nonce if isinstance(nonce, str) else ""
    a.ever_connected = False  # a first hello of this sandbox, not a reconnect
    env = {"FORKBOX_SANDBOX_ID": a.sandbox_id}
    parent = ident.get("parent_id")
    if isinstance(parent, str) and parent:
        env["FORKBOX_PARENT_ID"] = parent
    index = ident.get("fork_index")
    if isinstance(index, int) and not isinstance(index, bool):
        env["FORKBOX_FORK_INDEX"] = str(index)
    extra = ident.get("env")
    if isinstance(extra, dict):
        env.update({k: v for k, v in extra.items() if isinstance(k, str) and isinstance(v, str) and k and "=" not in k})
    a.base_env.update(env)
    os.environ.update(env)
