"""Framing shared by the agent and the REPL worker (docs/AGENT-PROTOCOL.md, "Framing").

frame = u32 header_len (BE) | u32 body_len (BE) | header: UTF-8 JSON object | body: raw bytes

Standard library only, Python >= 3.8.
"""

import array
import json
import os
import socket
import struct

import bounds

PROTOCOL_VERSION = 1
MAX_HEADER = bounds.FRAME_HEADER_BYTES
MAX_BODY = bounds.FRAME_BODY_BYTES
MIN_HEADER = 2  # the smallest JSON object, "{}"
MAX_FDS = 4  # fds accepted with one frame on the worker link (an eval carries 2)

_LENS = struct.Struct(">II")


class ProtocolError(Exception):
    """The peer sent a frame outside the bounds or not a JSON object with a string `t`: close the link."""


def encode_header(header):
    # ensure_ascii=False keeps non-ASCII text compact; separators drop the spaces json adds by default.
    return json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def encode(header, body=b""):
    """Encode one frame. Raises ProtocolError when the header or body is over the limits."""
    h = encode_header(header)
    if len(h) > MAX_HEADER:
        raise ProtocolError("header of %d bytes is over the %d-byte limit" % (len(h), MAX_HEADER))
    if len(body) > MAX_BODY:
        raise ProtocolError("body of %d bytes is over the %d-byte limit" % (len(body), MAX_BODY))
    return b"".join((_LENS.pack(len(h), len(body)), h, body))


def encode_raw(header_bytes, body=b"", body_len=None):
    """Frame from an already-encoded header (the agent splices results into headers without re-encoding).
    With body_len and no body: only the prefix and header, the caller sends the body bytes itself."""
    n = len(body) if body_len is None else body_len
    if len(header_bytes) > MAX_HEADER or n > MAX_BODY:
        raise ProtocolError("frame of %d+%d bytes is over the limits" % (len(header_bytes), n))
    return b"".join((_LENS.pack(len(header_bytes), n), header_bytes, body))


def _parse_header(raw):
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolError("frame header is not valid UTF-8 JSON: %s" % e)
    if not isinstance(header, dict):
        raise ProtocolError("frame header is not a JSON object")
    if not isinstance(header.get("t"), str):
        raise ProtocolError("frame header has no string field 't'")
    return header


class FrameReader:
    """Incremental decoder: feed() bytes as they arrive, get back complete (header, body) frames."""

    __slots__ = ("_buf",)

    def __init__(self):
        self._buf = bytearray()

    def feed(self, data):
        buf = self._buf
        buf += data
        frames = []
        pos = 0
        n = len(buf)
        while n - pos >= 8:
            hlen, blen = _LENS.unpack_from(buf, pos)
            # Check the bounds before waiting for the rest: a peer announcing 4 GiB must not make us buffer it.
            if hlen < MIN_HEADER or hlen > MAX_HEADER:
                raise ProtocolError("frame header length %d is outside 2..%d" % (hlen, MAX_HEADER))
            if blen > MAX_BODY:
                raise ProtocolError("frame body length %d is over the %d-byte limit" % (blen, MAX_BODY))
            end = pos + 8 + hlen + blen
            if n < end:
                break
            with memoryview(buf) as mv:  # one copy out of the buffer, not two
                header = _parse_header(bytes(mv[pos + 8 : pos + 8 + hlen]))
                body = bytes(mv[pos + 8 + hlen : end])
            frames.append((header, body))
            pos = end
        if pos:
            del buf[:pos]
        return frames


def _recv_exact(sock, n):
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv_frame(sock):
    """Blocking read of one frame from a socket (the worker's side). Returns None on a clean EOF."""
    lens = _recv_exact(sock, 8)
    if lens is None:
        return None
    return _rest_of_frame(sock, lens)


def _rest_of_frame(sock, lens):
    """The frame whose 8-byte length prefix `lens` was read from `sock`: (header, body), blocking."""
    hlen, blen = _LENS.unpack(lens)
    if hlen < MIN_HEADER or hlen > MAX_HEADER or blen > MAX_BODY:
        raise ProtocolError("bad frame lengths %d/%d" % (hlen, blen))
    raw = _recv_exact(sock, hlen + blen)
    if raw is None:
        raise ProtocolError("connection closed in the middle of a frame")
    return _parse_header(raw[:hlen]), raw[hlen:]


def close_fds(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def recv_frame_fds(sock):
    """Blocking read of one frame and of the fds sent with its first bytes. Returns None on a clean EOF,
    else (header, body, fds)."""
    fds = []
    lens = b""
    cmsg_space = socket.CMSG_SPACE(MAX_FDS * 4)
    flags = getattr(socket, "MSG_CMSG_CLOEXEC", 0)
    try:
        while len(lens) < 8:
            data, anc, _flags, _addr = sock.recvmsg(8 - len(lens), cmsg_space, flags)
            for level, kind, raw in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    a = array.array("i")
                    a.frombytes(raw[: len(raw) - len(raw) % a.itemsize])
                    fds.extend(a)
            if not data:
                if lens:
                    raise ProtocolError("connection closed in the middle of a frame")
                close_fds(fds)
                return None
            lens += data
        header, body = _rest_of_frame(sock, lens)
        return header, body, fds
    except BaseException:
        close_fds(fds)
        raise


def send_frame(sock, header, body=b""):
    """Blocking write of one frame (the worker's side)."""
    sock.sendall(encode(header, body))
