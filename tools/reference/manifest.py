"""Reference fixture manifest v1 (manifest.json beside the fixtures): what was recorded, from which
upstream revision and weights, on which device and sampling mode, and every file's SHA-256."""

import hashlib
import json
import os

FORMAT = "motionbricks-reference-fixture-manifest-v1"


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_manifest(out_dir, info):
    """info: upstream {repository, path, revision}, weights {name: path}, device, sampling,
    feature_source ("cpu_replay" | "cuda_observation"), session {...}, stand_ins [{package, why}],
    environment {...} (optional: torch version, behaviour backports, threads),
    files [names under out_dir]. Writes out_dir/manifest.json (sorted keys, indent 2)."""
    if info["feature_source"] not in ("cpu_replay", "cuda_observation"):
        raise ValueError("feature_source must be cpu_replay or cuda_observation")
    doc = {
        "format": FORMAT,
        "upstream": info["upstream"],
        "weights": {name: sha256_file(path) for name, path in info["weights"].items()},
        "device": info["device"],
        "sampling": info["sampling"],
        "feature_source": info["feature_source"],
        "session": info["session"],
        "stand_ins": info["stand_ins"],
        "environment": info.get("environment", {}),
        "files": {name: {"sha256": sha256_file(os.path.join(out_dir, name)),
                         "bytes": os.path.getsize(os.path.join(out_dir, name))} for name in sorted(info["files"])},
    }
    path = os.path.join(out_dir, "manifest.json")
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(path + ".tmp", path)
    return doc
