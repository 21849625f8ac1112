"""One stream's bounded output (outstream.py): head and tail within the budget, the rest counted and
spooled, the spool file never opened through something planted at its name."""

import os
import shutil
import tempfile
import unittest

from outstream import OutStream, valid_output_id


class OutStreamTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def stream(self, budget, spool_bytes=0, output_id=None):
        return OutStream("stdout", budget, spool_bytes, output_id, spool_dir=self.dir + "/out")

    def test_forwards_the_head_keeps_the_tail_and_counts_the_rest(self):
        s = self.stream(100)
        sent = [b for chunk in (b"a" * 60, b"b" * 60, b"c" * 500) for b, _ in s.feed(chunk, 0.0)]
        self.assertEqual(b"".join(sent), b"a" * 60 + b"b" * 15)  # the head: 75 bytes
        tail, offset = s.finish()
        self.assertEqual((tail, offset), (b"c" * 25, 595))
        self.assertEqual(s.omitted(), 620 - 75 - 25)
        self.assertEqual(s.result_fields(), {"stdout_total": 620, "stdout_file": None, "stdout_spooled": 0})

    def test_a_small_stream_that_left_bytes_out_is_spooled_whole(self):
        s = self.stream(100, 1 << 20, "x1")
        data = b"z" * 4999 + b"E\n"
        s.feed(data, 0.0)
        s.finish()
        f = s.result_fields()
        s.close()
        self.assertEqual(f["stdout_file"], self.dir + "/out/x1.stdout")
        with open(f["stdout_file"], "rb") as fh:
            self.assertEqual(fh.read(), data)

    def test_output_that_fits_leaves_no_file(self):
        s = self.stream(1000, 1 << 20, "x2")
        s.feed(b"small\n", 0.0)
        s.finish()
        self.assertIsNone(s.result_fields()["stdout_file"])
        s.close()
        self.assertFalse(os.path.exists(self.dir + "/out/x2.stdout"))

    def test_replaces_a_fifo_or_symlink_planted_at_the_spool_name(self):
        os.mkdir(self.dir + "/out", 0o700)
        victim = self.dir + "/victim"
        with open(victim, "w") as fh:
            fh.write("keep")
        os.mkfifo(self.dir + "/out/f.stdout")
        os.symlink(victim, self.dir + "/out/l.stdout")
        for oid in ("f", "l"):
            s = self.stream(10, 1 << 20, oid)
            s.feed(b"y" * 200_000, 0.0)  # past the lazy part: the file is opened while it runs
            s.finish()
            s.result_fields()
            s.close()
            with open(self.dir + "/out/%s.stdout" % oid, "rb") as fh:
                self.assertEqual(fh.read(), b"y" * 200_000)
        with open(victim) as fh:
            self.assertEqual(fh.read(), "keep")

    def test_output_ids_are_plain_names(self):
        for ok in ("a", "ex-1.out_2", "x" * 64):
            self.assertTrue(valid_output_id(ok), ok)
        for bad in ("", ".", "..", ".hidden", "a/b", "x" * 65, "é", "a b", None, 5):
            self.assertFalse(valid_output_id(bad), bad)


if __name__ == "__main__":
    unittest.main()
