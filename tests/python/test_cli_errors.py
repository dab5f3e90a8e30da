"""Every converter failure is one line on stderr and exit status 2, and leaves nothing behind:
no output directory it created, no partial or temporary file, an existing bundle unchanged
(issue 19.7: a bad zip CRC, MemoryError and other exceptions used to escape as tracebacks)."""

import contextlib
import io
import os
import tempfile
import unittest
import zipfile
from unittest import mock

import numpy as np

from helpers import has_torch, random_state_dicts, read_bytes, run_cli, write_sources
from motionbricks import cli
from motionbricks import constants as C


def corrupt_member(src, dst, pick):
    """dst: a copy of the zip src whose first member for which pick(name) holds has one data byte
    flipped (its CRC no longer matches); stored members, as torch writes them"""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        done = False
        for info in zin.infolist():
            data = zin.read(info)
            zout.writestr(info, data)
        for info in zout.infolist():
            if not done and pick(info.filename) and info.file_size > 0:
                done = True
                offset = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
        zout.close()
    if not done:
        raise AssertionError("no member to corrupt in %s" % src)
    with open(dst, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0xFF]))


class CliErrorTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def assert_one_line_failure(self, rc, err, what):
        self.assertEqual(rc, 2, "%s: exit %d, stderr %s" % (what, rc, err))
        lines = err.strip("\n").split("\n")
        self.assertEqual(len(lines), 1, "%s: %r" % (what, err))
        self.assertTrue(lines[0].startswith("convert: error: "), "%s: %r" % (what, err))
        self.assertNotIn("Traceback", err)

    def listing(self):
        out = []
        for root, dirs, files in os.walk(self.dir):
            out += [os.path.relpath(os.path.join(root, f), self.dir) for f in files + dirs]
        return sorted(out)

    def test_failure_while_writing_leaves_nothing(self):
        # the NaN is only found while the vq-decoder streams, after pose.gguf and root.gguf were written
        sds = random_state_dicts(3)
        sds["vqvae"][C.PREFIX_VQVAE + C.NAME_CODEBOOK][1, 2, 3] = np.nan
        args, _ = write_sources(self.dir, sds)
        before = self.listing()
        out = os.path.join(self.dir, "new", "bundle")
        rc, _, err = run_cli("bundle", *args, "--out", out, "--quiet")
        self.assert_one_line_failure(rc, err, "NaN while writing")
        self.assertIn("not finite", err)
        self.assertEqual(self.listing(), before, "a directory or file was left behind")

        # into an existing bundle: its files stay as they were, no temporary file is left
        good, _ = write_sources(os.path.join(self.dir), random_state_dicts(4))
        old = os.path.join(self.dir, "old")
        rc, _, err = run_cli("bundle", *good, "--out", old, "--quiet")
        self.assertEqual(rc, 0, err)
        files = {n: read_bytes(os.path.join(old, n)) for n in os.listdir(old)}
        before = self.listing()
        sds = random_state_dicts(3)
        sds["vqvae"][C.PREFIX_VQVAE + C.NAME_CODEBOOK][1, 2, 3] = np.inf
        args, _ = write_sources(os.path.join(self.dir), sds)
        before = self.listing()
        rc, _, err = run_cli("bundle", *args, "--out", old, "--quiet")
        self.assert_one_line_failure(rc, err, "Inf into an existing bundle")
        self.assertEqual(self.listing(), before)
        self.assertEqual({n: read_bytes(os.path.join(old, n)) for n in os.listdir(old)}, files)

    def test_unexpected_exceptions_are_one_line(self):
        args, _ = write_sources(self.dir)
        out = os.path.join(self.dir, "out")
        for exc, phrase in ((MemoryError(), "out of memory"), (RuntimeError("boom\nsecond line"), "boom"),
                            (ValueError("bad"), "bad"), (zipfile.BadZipFile("Bad CRC-32"), "Bad CRC-32")):
            err = io.StringIO()
            with mock.patch("motionbricks.converter.read_stats", side_effect=exc), contextlib.redirect_stderr(err):
                rc = cli.main(["bundle", *args, "--out", out, "--quiet"])
            self.assert_one_line_failure(rc, err.getvalue(), type(exc).__name__)
            self.assertIn(phrase, err.getvalue())
            self.assertFalse(os.path.exists(out))

    def test_random_bundle_and_styles_leave_nothing(self):
        before = self.listing()
        err = io.StringIO()
        with mock.patch("motionbricks.bundle.gguf.write_gguf_file", side_effect=OSError(28, "No space left")), \
                contextlib.redirect_stderr(err):
            rc = cli.main(["random-bundle", "--preset", "small", "--out", os.path.join(self.dir, "rb"), "--quiet"])
        self.assert_one_line_failure(rc, err.getvalue(), "random-bundle, disk full")
        self.assertEqual(self.listing(), before)
        # demo styles: the third style fails to write; the first two must not stay
        from motionbricks import style
        real = style.write_style
        calls = []

        def failing(*a, **k):
            calls.append(1)
            if len(calls) == 3:
                raise OSError(5, "Input/output error")
            return real(*a, **k)
        err = io.StringIO()
        with mock.patch("motionbricks.demo_styles.write_style", side_effect=failing), contextlib.redirect_stderr(err):
            rc = cli.main(["demo-styles", "--out", os.path.join(self.dir, "styles")])
        self.assert_one_line_failure(rc, err.getvalue(), "demo-styles")
        self.assertEqual(len(calls), 3)
        self.assertEqual(self.listing(), before)

    def test_bad_usage_is_one_line(self):
        for argv in ([], ["bundle"], ["random-bundle", "--preset", "huge", "--out", "x"], ["nosuch"]):
            rc, out, err = run_cli(*argv)
            self.assert_one_line_failure(rc, err, "usage %r" % argv)
            self.assertEqual(out, "")
        self.assertEqual(self.listing(), [])

    @unittest.skipUnless(has_torch(), "skipped: python3-torch not installed")
    def test_bad_zip_crc(self):
        import torch
        sds = random_state_dicts(6)
        args, _ = write_sources(self.dir, sds)
        good = os.path.join(self.dir, "pose.ckpt")
        torch.save({"state_dict": {k: torch.from_numpy(v) for k, v in sds["pose"].items()}}, good)
        for what, pick in (("data.pkl", lambda n: n.endswith("/data.pkl")), ("a storage", lambda n: "/data/" in n)):
            bad = os.path.join(self.dir, "bad.ckpt")
            corrupt_member(good, bad, pick)
            before = self.listing()
            out = os.path.join(self.dir, "out")
            rc, _, err = run_cli("bundle", "--pose", bad, *args[2:], "--out", out, "--quiet")
            self.assert_one_line_failure(rc, err, "bad CRC in " + what)
            self.assertIn("bad.ckpt", err)
            self.assertEqual(self.listing(), before)
            os.unlink(bad)


if __name__ == "__main__":
    unittest.main()
