"""bounds.parse: the bounds the host hands the agent, refused when missing or malformed."""

import json
import unittest

import bounds

GOOD = {k: 1024 for k in bounds.KEYS}


class ParseTest(unittest.TestCase):
    def test_reads_every_key(self):
        self.assertEqual(bounds.parse(json.dumps(GOOD)), GOOD)

    def test_drops_keys_it_does_not_know(self):
        self.assertEqual(bounds.parse(json.dumps(dict(GOOD, extra=5))), GOOD)

    def test_refuses_what_is_missing_or_not_a_positive_integer(self):
        for bad, why in [
            (None, "is not set"),
            ("{", "is not JSON"),
            ("[1]", "not a JSON object"),
            (json.dumps(dict(GOOD, tail_bytes=0)), "tail_bytes"),
            (json.dumps(dict(GOOD, tty_side=True)), "tty_side"),
            (json.dumps(dict(GOOD, spool_bytes=1.5)), "spool_bytes"),
            (json.dumps({k: v for k, v in GOOD.items() if k != "output_bytes"}), "output_bytes"),
        ]:
            with self.subTest(bad=bad):
                with self.assertRaises(ValueError) as e:
                    bounds.parse(bad)
                self.assertIn(why, str(e.exception))


if __name__ == "__main__":
    unittest.main()
