"""Framing (protocol.py): frames round-trip in any split, and out-of-bounds frames are refused before
anything is buffered."""

import struct
import unittest

import protocol
from protocol import FrameReader, ProtocolError


class FramingTest(unittest.TestCase):
    def test_round_trips_frames_fed_a_byte_at_a_time(self):
        data = protocol.encode({"t": "req", "id": 1, "x": "é"}, b"body") + protocol.encode({"t": "ev"})
        r = FrameReader()
        frames = []
        for i in range(len(data)):
            frames += r.feed(data[i:i + 1])
        self.assertEqual(frames, [({"t": "req", "id": 1, "x": "é"}, b"body"), ({"t": "ev"}, b"")])

    def test_refuses_announced_sizes_past_the_bounds_at_once(self):
        for hlen, blen in [(protocol.MAX_HEADER + 1, 0), (2, protocol.MAX_BODY + 1), (1, 0)]:
            with self.subTest(hlen=hlen, blen=blen):
                with self.assertRaises(ProtocolError):
                    FrameReader().feed(struct.pack(">II", hlen, blen))

    def test_refuses_headers_that_are_not_objects_with_a_string_t(self):
        for raw in [b"[1,2]", b'{"t":1}', b"\xff\xfe", b"{no"]:
            with self.subTest(raw=raw):
                with self.assertRaises(ProtocolError):
                    FrameReader().feed(struct.pack(">II", len(raw), 0) + raw)

    def test_encode_refuses_a_body_past_the_bound(self):
        with self.assertRaises(ProtocolError):
            protocol.encode({"t": "res"}, b"x" * (protocol.MAX_BODY + 1))


if __name__ == "__main__":
    unittest.main()
