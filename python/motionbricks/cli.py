"""Command line: bundle, random-bundle, dump, style, styles, demo-styles. Every failure is
one line on stderr ("convert: error: ...") and exit status 2, and writes nothing."""

import argparse
import json
import os
import sys
import time

from . import constants as C
from .errors import ConvertError


def _add_provenance(p):
    p.add_argument("--upstream-revision", default=C.RELEASE_UPSTREAM_REVISION, metavar="SHA",
                   help="upstream commit recorded in every component (default: the release's)")
    p.add_argument("--source-sha256", action="append", metavar="COMPONENT=HEX",
                   help="override the source hash of pose, root, vq-decoder or support (repeatable)")
    p.add_argument("--safe-manifest-sha256", metavar="HEX",
                   help="manifest.json safe_manifest_sha256 (default: hash of the canonical extraction record)")


def _add_hparams(p):
    p.add_argument("--pose-heads", type=int, metavar="N", help="pose transformer heads (default 16)")
    p.add_argument("--root-heads", type=int, metavar="N", help="root transformer heads (default 16)")
    p.add_argument("--dilation-growth", type=int, metavar="N", help="conv dilation growth rate (default 3)")


def _add_dtype(p):
    p.add_argument("--dtype", choices=("f32", "bf16", "q8_0"), default="f32",
                   help="matrix weights of linear/conv layers (default f32; norms, biases, embeddings stay F32)")


def _add_stats(p):
    p.add_argument("--mean", metavar="FILE", help="mean.npy [418]")
    p.add_argument("--std", metavar="FILE", help="std.npy [418]")
    p.add_argument("--stats", metavar="FILE", help=".safetensors holding mean and std [418]")


class _Parser(argparse.ArgumentParser):
    """Bad usage is one line and exit 2 as well (--help still prints the full usage)."""

    def error(self, message):
        self.exit(2, "convert: error: %s (%s --help)\n" % (message, self.prog))


def build_parser():
    ap = _Parser(prog="convert.py", description="MotionBricks GGUF model bundle converter")
    sub = ap.add_subparsers(dest="command", required=True)

    b = sub.add_parser("bundle", help="convert upstream checkpoints (.ckpt or .safetensors) to a bundle")
    b.add_argument("--pose", required=True, metavar="FILE", help="pose model .ckpt / .safetensors")
    b.add_argument("--root", required=True, metavar="FILE", help="root model .ckpt / .safetensors")
    b.add_argument("--vqvae", required=True, metavar="FILE", help="VQ-VAE .ckpt / .safetensors")
    _add_stats(b)
    b.add_argument("--out", required=True, metavar="DIR", help="bundle directory (created)")
    b.add_argument("--skeleton", metavar="DIR",
                   help="upstream skeleton/ folder: cross-check the carried constants against joints.p, parents.p")
    _add_provenance(b)
    _add_hparams(b)
    _add_dtype(b)
    b.add_argument("--quiet", action="store_true", help="no progress on stderr")

    r = sub.add_parser("random-bundle", help="write a bundle of the exact architecture with seeded random weights")
    r.add_argument("--preset", choices=("full", "small"), required=True)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--out", required=True, metavar="DIR")
    _add_stats(r)
    _add_provenance(r)
    _add_hparams(r)
    _add_dtype(r)
    r.add_argument("--quiet", action="store_true", help="no progress on stderr")

    from .style import add_parser as add_style_parser, add_library_parser
    add_style_parser(sub)
    add_library_parser(sub)
    from .demo_styles import add_parser as add_demo_styles_parser
    add_demo_styles_parser(sub)
    from .sonic import add_parser as add_sonic_parser, add_onnx_parser
    add_sonic_parser(sub)
    add_onnx_parser(sub)

    d = sub.add_parser("dump", help="print a GGUF file's metadata and tensors")
    d.add_argument("file", metavar="FILE.gguf")
    d.add_argument("--json", action="store_true", help="one JSON object")
    return ap


def dump(path, as_json):
    from .gguf import GGUFFile
    with GGUFFile(path) as g:
        if as_json:
            out = {"file": path, "size": g.size, "alignment": g.alignment,
                   "metadata": [{"key": k, "type": t, "value": v} for k, t, v in g.metadata],
                   "tensors": [{"name": t["name"], "type": C.GGML_TYPE_NAMES.get(t["type"], t["type"]),
                                "ne": t["ne"], "offset": t["offset"]} for t in g.tensors]}
            print(json.dumps(out, indent=2))
            return
        print("%s: GGUF v%d, %d bytes, %d metadata keys, %d tensors, alignment %d"
              % (path, C.GGUF_VERSION, g.size, len(g.metadata), len(g.tensors), g.alignment))
        for k, t, v in g.metadata:
            s = repr(v) if not isinstance(v, str) else v
            if len(s) > 100:
                s = s[:97] + "..."
            print("  %-32s %-2d %s" % (k, t, s))
        n = 0
        for t in g.tensors:
            n += t["n_elements"]
            print("  %-64s %-4s ne=%-22s offset=%d" % (t["name"], C.GGML_TYPE_NAMES.get(t["type"], t["type"]),
                                                     t["ne"], t["offset"]))
        print("  %d elements" % n)


def _one_line(e):
    if isinstance(e, ConvertError):
        text = str(e)
    elif isinstance(e, MemoryError):
        text = "out of memory" + (": %s" % e if str(e) else "")
    else:   # not a ConvertError: a reader or library refused something the checks did not name
        text = "%s: %s" % (type(e).__name__, e)
    return " ".join(text.split("\n"))


def main(argv=None):
    args = build_parser().parse_args(argv)
    t0 = time.monotonic()
    try:
        if args.command == "dump":
            dump(args.file, args.json)
            return 0
        if args.command == "style":
            from .style import convert
            sys.stderr.write("convert: %s\n" % convert(args))
            return 0
        if args.command == "sonic":
            from .sonic import convert_onnx
            sys.stderr.write("convert: %s\n" % convert_onnx(args.encoder, args.decoder, args.out))
            return 0
        if args.command == "random-sonic":
            from .sonic import write_random_sonic
            sys.stderr.write("convert: %s\n" % write_random_sonic(args.out, args.seed, args.smpl, args.teleop, args.tame))
            return 0
        if args.command == "demo-styles":
            from .demo_styles import write_demo_styles
            for line in write_demo_styles(args.out):
                sys.stderr.write("convert: %s\n" % line)
            return 0
        if args.command == "styles":
            from .style import convert_clip_library
            sys.stderr.write("convert: %s\n" % convert_clip_library(args))
            return 0
        if args.command == "bundle":
            from .converter import convert
            manifest = convert(args)
        else:
            from .random_bundle import random_bundle
            manifest = random_bundle(args)
    except KeyboardInterrupt:
        sys.stderr.write("convert: interrupted\n")
        return 130
    except Exception as e:   # anything else too: one line, never a traceback
        sys.stderr.write("convert: error: %s\n" % _one_line(e))
        return 2
    if not args.quiet:
        comps = manifest[C.MANIFEST_KEY_COMPONENTS]
        for role in C.COMPONENTS:
            e = comps[role]
            size = os.path.getsize(os.path.join(args.out, e[C.MANIFEST_KEY_PATH]))
            sys.stderr.write("convert: %-16s %3d tensors %11d parameters %11d bytes  %s\n"
                             % (e[C.MANIFEST_KEY_PATH], e[C.MANIFEST_KEY_TENSOR_COUNT],
                                e[C.MANIFEST_KEY_PARAMETER_COUNT], size, e[C.MANIFEST_KEY_SHA256]))
        sys.stderr.write("convert: %d inference parameters, wrote %s in %.1f s\n"
                         % (manifest[C.MANIFEST_KEY_INFERENCE_PARAMETER_COUNT], args.out, time.monotonic() - t0))
    return 0
