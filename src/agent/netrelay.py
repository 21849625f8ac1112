"""The sandbox's way out under an `allow` network policy: a TCP listener on 127.0.0.1:<port> in the
sandbox's own network namespace, relaying each connection to the daemon's egress proxy on the Unix
socket /.forkbox/inbox/net.sock (the policy lives there, in the daemon: nothing here can widen it).
Runs in the agent's selector loop. Bounded: connections at once, bytes buffered per direction. `Pair` (one
relayed connection) and `Relay` (a set of them) are shared with the published ports' relay (portrelay.py)."""

import socket

import bounds

PROXY_SOCKET = "/.forkbox/inbox/net.sock"
MAX_CONNS = bounds.RELAY_CONNECTIONS
CHUNK = 65536
MAX_BUFFERED = 256 * 1024
READ, WRITE = 1, 2


class _End:
    def __init__(self, sock):
        self.sock = sock
        self.out = bytearray()  # bytes waiting to be written to this end
        self.eof = False  # this end sent EOF
        self.shut = False  # we shut down writing to this end
        self.registered = True


class Pair:
    def __init__(self, relay, a, b):
        self.relay = relay
        self.ends = (_End(a), _End(b))
        self.closed = False
        for i, e in enumerate(self.ends):
            relay.sel.register(e.sock, READ, lambda mask, i=i: self._ready(i, mask))

    def _other(self, i):
        return self.ends[1 - i]

    def _mask(self, i):
        e, o = self.ends[i], self._other(i)
        m = 0
        if not e.eof and len(o.out) < MAX_BUFFERED:
            m |= READ
        if e.out or (o.eof and not e.shut and not e.out):
            m |= WRITE
        return m

    def _update(self):
        if self.closed:
            return
        for i, e in enumerate(self.ends):
            m = self._mask(i)
            cb = lambda mask, i=i: self._ready(i, mask)  # noqa: E731
            try:
                if m and e.registered:
                    self.relay.sel.modify(e.sock, m, cb)
                elif m:
                    self.relay.sel.register(e.sock, m, cb)
                    e.registered = True
                elif e.registered:
                    self.relay.sel.unregister(e.sock)
                    e.registered = False
            except (KeyError, ValueError, OSError):
                self.close()
                return
        if all(e.eof and e.shut for e in self.ends):
            self.close()

    def _ready(self, i, mask):
        if self.closed:
            return
        e, o = self.ends[i], self._other(i)
        try:
            if mask & READ and not e.eof and len(o.out) < MAX_BUFFERED:
                data = e.sock.recv(CHUNK)
                if data:
                    o.out += data
                else:
                    e.eof = True
            if mask & WRITE and e.out:
                n = e.sock.send(bytes(e.out[:CHUNK]))
                del e.out[:n]
            if o.eof and not e.out and not e.shut:
                e.shut = True
                e.sock.shutdown(socket.SHUT_WR)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self.close()
            return
        self._update()

    def close(self):
        if self.closed:
            return
        self.closed = True
        self.relay.pairs.discard(self)
        for e in self.ends:
            if e.registered:
                try:
                    self.relay.sel.unregister(e.sock)
                except (KeyError, ValueError):
                    pass
            e.sock.close()


class Relay:
    """What the egress and published-port relays share: their live Pairs, and what is done with them."""

    def __init__(self, sel, path):
        self.sel = sel
        self.path = path
        self.pairs = set()

    def adopt(self, a, b):
        """Relay connected sockets `a` and `b` from the selector loop."""
        a.setblocking(False)
        b.setblocking(False)
        self.pairs.add(Pair(self, a, b))

    def close_all(self):
        """End every relayed connection (both ends see it close); the relay itself stays."""
        for p in list(self.pairs):
            p.close()
        self.pairs = set()

    def close_in_child(self):
        """In a process forked off the agent: drop our copies (their peers must see EOF)."""
        for p in list(self.pairs):
            for e in p.ends:
                try:
                    e.sock.close()
                except OSError:
                    pass
        self.pairs = set()


class NetRelay(Relay):
    def __init__(self, sel, port, path=PROXY_SOCKET):
        super().__init__(sel, path)
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", port))
        self.lsock.listen(128)
        self.lsock.setblocking(False)
        sel.register(self.lsock, READ, self._accept)

    def _accept(self, mask):
        try:
            c, _ = self.lsock.accept()
        except OSError:
            return
        if len(self.pairs) >= MAX_CONNS:
            c.close()
            return
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            u.connect(self.path)  # a local socket: connects at once or fails
        except OSError:
            c.close()
            u.close()
            return
        self.adopt(c, u)

    def close_in_child(self):
        super().close_in_child()
        self.lsock.close()


def proxy_env(port):
    # One port for both dialects: the proxy tells SOCKS5 (first byte 0x05) from HTTP. ALL_PROXY is the
    # SOCKS5 form (names resolved by the proxy) for tools that speak other TCP through it.
    url = "http://127.0.0.1:%d" % port
    env = {}
    for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        env[k] = url
    env["ALL_PROXY"] = env["all_proxy"] = "socks5h://127.0.0.1:%d" % port
    env["NO_PROXY"] = env["no_proxy"] = "localhost,127.0.0.1,::1"
    return env

