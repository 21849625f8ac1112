"""Path and argument checks of the file ops (fileio.py): every path is absolute and normalised inside
the sandbox's root, nothing but regular files are opened."""

import os
import shutil
import tempfile
import unittest

from execs import OpError
from fileio import int_arg, open_regular, path_arg


class PathArgTest(unittest.TestCase):
    def test_normalises_into_an_absolute_path(self):
        for given, want in [("a/b", "/a/b"), ("/x/../../etc", "/etc"), ("//y/./z/", "/y/z"), ("..", "/")]:
            self.assertEqual(path_arg({"path": given}), want)

    def test_refuses_what_is_not_a_plain_string(self):
        for bad in ("", None, 5, "a\0b"):
            with self.assertRaises(OpError):
                path_arg({"path": bad})

    def test_int_arg_takes_only_whole_numbers_at_or_over_the_minimum(self):
        self.assertEqual(int_arg({"n": 3}, "n", 1), 3)
        self.assertEqual(int_arg({}, "n", 1), 1)
        for bad in (-1, True, 1.5, "3"):
            with self.assertRaises(OpError):
                int_arg({"n": bad}, "n", 1)


class OpenRegularTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_opens_a_regular_file_and_refuses_fifos_directories_and_symlinks(self):
        f = os.path.join(self.dir, "f")
        with open(f, "w") as fh:
            fh.write("x")
        fd, st = open_regular(f, os.O_RDONLY)
        os.close(fd)
        self.assertEqual(st.st_size, 1)
        os.mkfifo(os.path.join(self.dir, "fifo"))
        os.symlink(f, os.path.join(self.dir, "link"))
        for name, code in [("fifo", "bad_request"), ("link", "bad_request"), ("", "is_a_directory")]:
            with self.assertRaises(OpError) as e:
                open_regular(os.path.join(self.dir, name), os.O_RDONLY, follow=False)
            self.assertEqual(e.exception.code, code, name)


if __name__ == "__main__":
    unittest.main()
