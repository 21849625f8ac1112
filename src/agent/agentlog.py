"""The agent's own log (docs/AGENT-PROTOCOL.md, "log"). Standard library only, Python >= 3.8.

The agent has no stdout or stderr (fds 0-2 are /dev/null: a host file there would be a way out of the
sandbox), so its diagnostics go to a bounded ring in memory and, while a host connection is up, to the
host as `log` frames. Both are bounded: lines are cut to MAX_LINE characters, the ring keeps the last
RING_LINES, and at most RATE_PER_S lines a second (bursts of BURST) are sent; the rest are counted and
the count travels with the next line sent (`dropped`).
"""

import collections
import time

MAX_LINE = 2000
RING_LINES = 200
RATE_PER_S = 10.0
BURST = 40
LEVELS = ("info", "warn", "error")


class AgentLog:
    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self.ring = collections.deque(maxlen=RING_LINES)  # (level, text), newest last
        self._unsent = collections.deque(maxlen=RING_LINES)  # lines logged while no host was listening
        self._sink = None
        self._tokens = float(BURST)
        self._last = clock()
        self.dropped = 0  # lines not sent (rate limit, or pushed out of the unsent ring) since the last one sent

    def write(self, level, msg):
        if level not in LEVELS:
            level = "info"
        try:
            text = str(msg)
        except Exception:
            text = "<unprintable log message>"
        text = text[:MAX_LINE]
        self.ring.append((level, text))
        if self._sink is None:
            if len(self._unsent) == self._unsent.maxlen:
                self.dropped += 1
            self._unsent.append((level, text))
            return
        self._send(level, text)

    def attach(self, sink):
        """sink(level, text, dropped) sends one `log` frame. Lines logged while detached go first."""
        self._sink = sink
        while self._unsent and self._sink is not None:
            level, text = self._unsent.popleft()
            self._send(level, text)

    def detach(self):
        self._sink = None

    def _send(self, level, text):
        now = self._clock()
        self._tokens = min(float(BURST), self._tokens + (now - self._last) * RATE_PER_S)
        self._last = now
        if self._tokens < 1.0:
            self.dropped += 1
            return
        self._tokens -= 1.0
        dropped, self.dropped = self.dropped, 0
        try:
            self._sink(level, text, dropped)
        except Exception:  # a broken connection must never break the caller of log()
            self.dropped += dropped + 1
