"""An upstream-layout result folder (`out/motionbricks_{pose,root,vqvae}/version_1/`) for weights
that are not upstream's release checkpoints, such as the small seeded random weights of
../shared/fixtures/reference-small: the checkout's own hparams.yaml/config.yaml with the
architecture overrides applied, its skeleton/ and stats/, and each component's weights saved as
a Lightning-style checkpoint ({"state_dict": ...}) where upstream's loader looks for it.
The real release needs none of this: pass its out/ folder to the recorder as it is."""

import json
import os
import shutil
import sys

import numpy as np
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from motionbricks.safetensors import read_safetensors  # noqa: E402

COMPONENTS = {"pose": "motionbricks_pose", "root": "motionbricks_root", "vqvae": "motionbricks_vqvae"}
CKPT = "model-step=2000000.ckpt"
# where each override list of model_config.json applies, per hparams file
OVERRIDE_ROOTS = {
    "pose": {"pose": "", "vqvae": "model.pose_vqvae_network."},
    "root": {"root": ""},
    "vqvae": {"vqvae": "model.pose_vqvae_network."},
}


def apply_overrides(doc, overrides, prefix=""):
    """overrides: ["a.b.c=value", ...] (value parsed as YAML) set in the nested dict doc."""
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"override {item!r} is not key=value")
        node = doc
        parts = (prefix + key).split(".")
        for p in parts[:-1]:
            if not isinstance(node.get(p), dict):
                raise KeyError(f"override {item!r}: {p} is not a section")
            node = node[p]
        if parts[-1] not in node:
            raise KeyError(f"override {item!r}: no key {parts[-1]}")
        node[parts[-1]] = yaml.safe_load(value)
    return doc


def load_state_dict(path):
    import torch
    tensors, _ = read_safetensors(path)
    out = {}
    for name, lazy in tensors.items():
        a = np.ascontiguousarray(lazy.load())
        out[name] = torch.from_numpy(a.copy())
    return out


def build(upstream_dir, weights_dir, dest, overrides=None):
    """dest/out/... from weights_dir/{pose,root,vqvae}.safetensors (+ stats.safetensors, whose
    mean/std replace the checkout's). overrides: {"pose": [...], "root": [...], "vqvae": [...]}.
    Returns dest/out."""
    import torch
    overrides = overrides or {}
    result = os.path.join(dest, "out")
    stats = os.path.join(weights_dir, "stats.safetensors")
    for comp, folder in COMPONENTS.items():
        src = os.path.join(upstream_dir, "out", folder, "version_1")
        dst = os.path.join(result, folder, "version_1")
        if os.path.exists(dst):
            shutil.rmtree(dst)
        os.makedirs(os.path.join(dst, "checkpoints"))
        for sub in ("skeleton", "stats"):
            shutil.copytree(os.path.join(src, sub), os.path.join(dst, sub))
        shutil.copy(os.path.join(src, "meta.yaml"), dst)
        for name in ("hparams.yaml", "config.yaml"):
            with open(os.path.join(src, name)) as f:
                doc = yaml.safe_load(f)
            for group, prefix in OVERRIDE_ROOTS[comp].items():
                apply_overrides(doc, overrides.get(group, []), prefix)
            with open(os.path.join(dst, name), "w") as f:
                yaml.safe_dump(doc, f, sort_keys=False)
        if os.path.exists(stats):
            tensors, _ = read_safetensors(stats)
            for key in ("mean", "std"):
                np.save(os.path.join(dst, "stats", "motion", key + ".npy"), tensors[key].load().astype(np.float64))
        state = load_state_dict(os.path.join(weights_dir, comp + ".safetensors"))
        torch.save({"state_dict": state}, os.path.join(dst, "checkpoints", CKPT))
    return result


def overrides_from_model_config(path):
    with open(path) as f:
        return json.load(f).get("overrides", {})
