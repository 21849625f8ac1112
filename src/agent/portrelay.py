"""Published ports: on the daemon's `port.connect {port, token}` the agent connects to 127.0.0.1:<port>
in the sandbox's own network namespace and to the daemon's Unix socket /.forkbox/inbox/ports.sock (the
daemon checks by SO_PEERCRED that the peer is this agent, and the token names the host connection
waiting for it), then relays the two from its selector loop (netrelay.Relay). Only this sandbox's
loopback is ever dialled: the port is the only thing the daemon chooses. Bounded like the egress relay."""

import re
import socket

from execs import OpError
from netrelay import MAX_CONNS, Relay

PORTS_SOCKET = "/.forkbox/inbox/ports.sock"
TOKEN_RE = re.compile(r"^[0-9a-f]{32}$")
CONNECT_TIMEOUT_S = 0.5


class PortRelay(Relay):
    def __init__(self, sel, path=PORTS_SOCKET):
        super().__init__(sel, path)

    def connect(self, a):
        port, token = a.get("port"), a.get("token")
        if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
            raise OpError("bad_request", "port.connect needs port: an integer from 1 to 65535")
        if not isinstance(token, str) or not TOKEN_RE.match(token):
            raise OpError("bad_request", "port.connect needs token: 32 lower-case hex digits")
        if len(self.pairs) >= MAX_CONNS:
            raise OpError("busy", "%d published-port connections are open in this sandbox" % len(self.pairs))
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            c.settimeout(CONNECT_TIMEOUT_S)  # loopback: at once, unless the server's backlog is full
            c.connect(("127.0.0.1", port))
        except OSError as e:
            c.close()
            u.close()
            raise OpError("unavailable", "nothing accepts connections on port %d in the sandbox (%s): start a "
                          "server listening on 127.0.0.1:%d there" % (port, e.strerror or e, port))
        try:
            u.connect(self.path)  # a local socket: connects at once or fails
            u.sendall((token + "\n").encode())
        except OSError as e:
            c.close()
            u.close()
            raise OpError("unavailable", "cannot reach the daemon's ports socket: %s" % (e.strerror or e))
        self.adopt(c, u)
