"""support.gguf built from the upstream stats and skeleton with the release
provenance is byte-identical to the published one; the carried skeleton
constants match the upstream values."""

import hashlib
import json
import os
import tempfile
import unittest

import numpy as np

from helpers import read_bytes, require_shared, run_cli
from motionbricks import constants as C
from motionbricks import gguf
from motionbricks.bundle import component_metadata, gguf_tensors, support_component

PUBLISHED_SHA256 = "5d41cae4bc494e612ef19e25f599351aafbc9ef1cb46d4ac3f1e42bb7ab07200"
PUBLISHED_BYTES = 5472
RELEASE_REVISION = "a0732b642c0333077e127a2f56ab0014c196bca4"
RELEASE_SUPPORT_SOURCE = "229b764411652b2ab0f824481d6daf897f701a97223029759444fc5bc241ea22"


class SupportTest(unittest.TestCase):
    def setUp(self):
        self.mean = require_shared("data/upstream/stats/mean.npy")
        self.std = require_shared("data/upstream/stats/std.npy")
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_writer_reproduces_published_support(self):
        comp = support_component(np.load(self.mean).astype(np.float32), np.load(self.std).astype(np.float32),
                                 RELEASE_SUPPORT_SOURCE)
        tensors = gguf_tensors(comp)
        md = component_metadata("support", RELEASE_REVISION, RELEASE_SUPPORT_SOURCE, sum(t.n_elements for t in tensors))
        path = os.path.join(self.tmp.name, "support.gguf")
        size, sha = gguf.write_gguf(path, md, tensors)
        self.assertEqual(size, PUBLISHED_BYTES)
        self.assertEqual(sha, PUBLISHED_SHA256)
        self.assertEqual(hashlib.sha256(read_bytes(path)).hexdigest(), PUBLISHED_SHA256)

    def test_cli_reproduces_published_support(self):
        # the whole bundle path (here with random small weights) writes the same support.gguf
        out = os.path.join(self.tmp.name, "b")
        rc, _, err = run_cli("random-bundle", "--preset", "small", "--out", out, "--quiet", "--mean", self.mean,
                             "--std", self.std, "--upstream-revision", RELEASE_REVISION,
                             "--source-sha256", "support=" + RELEASE_SUPPORT_SOURCE)
        self.assertEqual(rc, 0, err)
        path = os.path.join(out, "support.gguf")
        self.assertEqual(os.path.getsize(path), PUBLISHED_BYTES)
        self.assertEqual(hashlib.sha256(read_bytes(path)).hexdigest(), PUBLISHED_SHA256)
        m = json.loads(read_bytes(os.path.join(out, "manifest.json")))
        self.assertEqual(m["components"]["support"]["sha256"], PUBLISHED_SHA256)
        self.assertEqual(m["components"]["support"]["parameter_count"], 972)

    def test_default_provenance_differs(self):
        # without the release provenance the bytes differ only in what provenance says
        out = os.path.join(self.tmp.name, "c")
        rc, _, err = run_cli("random-bundle", "--preset", "small", "--out", out, "--quiet", "--mean", self.mean,
                             "--std", self.std)
        self.assertEqual(rc, 0, err)
        with gguf.GGUFFile(os.path.join(out, "support.gguf")) as g:
            want = hashlib.sha256(read_bytes(self.mean) + read_bytes(self.std)).hexdigest()
            self.assertEqual(g.meta[C.KEY_SOURCE_SHA256], want)


class SkeletonTest(unittest.TestCase):
    def test_constants_match_upstream(self):
        skel = json.loads(read_bytes(require_shared("data/upstream/g1skel34.json")))
        self.assertEqual(skel["skeleton"], C.SKELETON)
        self.assertEqual(len(skel["joints"]), C.N_JOINTS)
        for j, (name, parent, neutral) in zip(skel["joints"], C.SKELETON_JOINTS):
            self.assertEqual(j["name"], name)
            self.assertEqual(j["parent"], parent)
            self.assertEqual(tuple(j["neutral"]), neutral, name)

    def test_topology(self):
        self.assertEqual(C.SKELETON_JOINTS[0][1], -1)
        for i, (_, parent, _) in enumerate(C.SKELETON_JOINTS[1:], 1):
            self.assertTrue(0 <= parent < i)


if __name__ == "__main__":
    unittest.main()
