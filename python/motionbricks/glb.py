"""G1 clips from glTF 2.0 binary (GLB): the reference runtime's Kimodo `animation.glb` layout, and
what `motionbricks plan --output x.glb` writes. The rules are those of the C++ reader
(src/export/glb-reader.cpp; docs/FORMATS.md): ≤ 16 MiB, header and chunk lengths within the file,
node-only, 34 nodes named after g1skel34 in its hierarchy with its rest offsets (1 mm), one LINEAR
animation of the root's translation and every node's x y z w rotation on one 30 fps time track,
≤ 18,000 frames, finite values, quaternion norms 0.9..1.1; every accessor within its bufferView,
every bufferView within the buffer, none overlapping. Any violation raises ConvertError naming it.
"""

import json
import math
import struct

import numpy as np

from . import constants as C
from .errors import ConvertError

MAX_BYTES = 16 << 20
MAX_FRAMES = 18000
FPS = 30.0
TOP_LEVEL = {"asset", "scene", "scenes", "nodes", "buffers", "bufferViews", "accessors", "animations",
             "extensionsUsed", "extensions", "extras"}
COMPONENTS = {"SCALAR": 1, "VEC3": 3, "VEC4": 4}


def _index(v, limit, where):
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ConvertError("%s is not a non-negative integer" % where)
    if v >= limit:
        raise ConvertError("%s = %d, beyond %d allowed" % (where, v, limit))
    return v


def _list(v, where, most=1024):
    if not isinstance(v, list):
        raise ConvertError("%s is not an array" % where)
    if len(v) > most:
        raise ConvertError("%s has %d entries, at most %d" % (where, len(v), most))
    return v


def _obj(v, where):
    if not isinstance(v, dict):
        raise ConvertError("%s is not an object" % where)
    return v


def _get(o, key, where):
    if key not in o:
        raise ConvertError("%s.%s is missing" % (where, key))
    return o[key]


def _no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ConvertError("JSON object has the key %r twice" % k[:64])
        d[k] = v
    return d


def read_glb(data, what="glb"):
    """GLB bytes → (root [F, 3] float64, local rotations x y z w [F, 34, 4] float64, normalised)."""
    try:
        return _read(data)
    except ConvertError as e:
        raise ConvertError("%s: %s" % (what, e)) from None


def _read(b):
    n = len(b)
    if n > MAX_BYTES:
        raise ConvertError("%d bytes, a clip GLB holds at most 16 MiB" % n)
    if n < 12 or b[:4] != b"glTF":
        raise ConvertError("not a GLB file (magic is not \"glTF\" or shorter than 12 bytes)")
    version, length = struct.unpack_from("<II", b, 4)
    if version != 2:
        raise ConvertError("GLB version %d, only 2 is read" % version)
    if length != n:
        raise ConvertError("header length %d but the file has %d bytes" % (length, n))
    if n < 20 or b[16:20] != b"JSON":
        raise ConvertError("chunk 0 is not of type JSON")
    jl = struct.unpack_from("<I", b, 12)[0]
    if jl > n - 20 or jl == 0 or jl % 4:
        raise ConvertError("JSON chunk length %d runs past the file or is not a multiple of 4" % jl)
    a = 20 + jl
    if n - a < 8 or b[a + 4:a + 8] != b"BIN\0":
        raise ConvertError("no BIN chunk after the JSON chunk")
    bl = struct.unpack_from("<I", b, a)[0]
    if bl > n - a - 8 or bl % 4 or a + 8 + bl != n:
        raise ConvertError("BIN chunk length %d does not end the file" % bl)
    binary = b[a + 8:a + 8 + bl]
    try:
        doc = json.loads(b[20:a].decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (ValueError, RecursionError) as e:
        raise ConvertError("JSON chunk: not valid JSON (%s)" % str(e)[:80]) from None
    _obj(doc, "the JSON chunk")
    for k in doc:
        if k not in TOP_LEVEL:
            raise ConvertError("top-level %r: a clip GLB is node-only (no meshes, skins, cameras, materials or images)" % k[:64])
    if _obj(_get(doc, "asset", "glTF"), "asset").get("version") != "2.0":
        raise ConvertError("asset.version is not \"2.0\"")

    # buffer, views, accessors
    bufs = _list(_get(doc, "buffers", "glTF"), "buffers", 1)
    if len(bufs) != 1 or "uri" in _obj(bufs[0], "buffers[0]"):
        raise ConvertError("buffers must hold exactly one buffer without uri (the BIN chunk)")
    blen = _index(_get(bufs[0], "byteLength", "buffers[0]"), bl + 1, "buffers[0].byteLength")
    if bl - blen > 3:
        raise ConvertError("buffers[0].byteLength is more than 3 bytes short of the BIN chunk")
    views = []
    for i, v in enumerate(_list(_get(doc, "bufferViews", "glTF"), "bufferViews")):
        w = "bufferViews[%d]" % i
        _obj(v, w)
        _index(_get(v, "buffer", w), 1, w + ".buffer")
        off = _index(v.get("byteOffset", 0), blen + 1, w + ".byteOffset")
        ln = _index(_get(v, "byteLength", w), blen + 1, w + ".byteLength")
        if ln == 0 or ln > blen - off or off % 4:
            raise ConvertError("%s (offset %d, length %d) runs past the buffer or is misaligned" % (w, off, ln))
        stride = v.get("byteStride", 0)
        if "byteStride" in v and (_index(stride, 253, w + ".byteStride") < 4 or stride % 4):
            raise ConvertError("%s.byteStride must be 4..252 and a multiple of 4" % w)
        views.append((off, ln, stride))
    spans = sorted(views)
    for p, q in zip(spans, spans[1:]):
        if q[0] < p[0] + p[1]:
            raise ConvertError("bufferViews overlap (at buffer byte %d)" % q[0])
    accessors = []
    for i, acc in enumerate(_list(_get(doc, "accessors", "glTF"), "accessors")):
        w = "accessors[%d]" % i
        _obj(acc, w)
        if "sparse" in acc or acc.get("normalized", False) is not False or _get(acc, "componentType", w) != 5126:
            raise ConvertError("%s is sparse, normalized or not FLOAT" % w)
        vi = _index(_get(acc, "bufferView", w), len(views), w + ".bufferView")
        comps = COMPONENTS.get(_get(acc, "type", w))
        if comps is None:
            raise ConvertError("%s.type is not SCALAR, VEC3 or VEC4" % w)
        count = _index(_get(acc, "count", w), MAX_FRAMES + 1, w + ".count")
        off, ln, stride = views[vi]
        aoff = _index(acc.get("byteOffset", 0), ln, w + ".byteOffset")
        stride = stride or 4 * comps
        if count == 0 or aoff % 4 or stride < 4 * comps or aoff + stride * (count - 1) + 4 * comps > ln:
            raise ConvertError("%s: %d elements from byte %d do not fit its view of %d bytes" % (w, count, aoff, ln))
        accessors.append((off + aoff, count, comps, stride))

    def read(i, comps, role):
        start, count, c, stride = accessors[i]
        if c != comps:
            raise ConvertError("accessors[%d] (%s) has %d components, %d expected" % (i, role, c, comps))
        out = np.empty((count, comps), dtype=np.float64)
        for e in range(count):
            out[e] = np.frombuffer(binary, dtype="<f4", count=comps, offset=start + e * stride)
        return out

    # nodes: names, one parent each, no cycle, g1skel34's tree and offsets
    names = [j[0] for j in C.SKELETON_JOINTS]
    parents = [j[1] for j in C.SKELETON_JOINTS]
    neutral = np.array([j[2] for j in C.SKELETON_JOINTS], dtype=np.float64)
    nodes = _list(_get(doc, "nodes", "glTF"), "nodes", 34)
    if len(nodes) != 34:
        raise ConvertError("nodes has %d entries, a g1skel34 clip has 34" % len(nodes))
    joint_of, parent = [], [-1] * 34
    for i, nd in enumerate(nodes):
        w = "nodes[%d]" % i
        _obj(nd, w)
        for k in ("mesh", "skin", "camera", "matrix", "weights"):
            if k in nd:
                raise ConvertError("%s.%s is set: a clip GLB is node-only" % (w, k))
        name = _get(nd, "name", w)
        if name not in names:
            raise ConvertError("%s.name %r is not a g1skel34 joint" % (w, str(name)[:64]))
        if names.index(name) in joint_of:
            raise ConvertError("%s.name %r is used twice" % (w, name))
        joint_of.append(names.index(name))
        for key, size, default in (("scale", 3, 1.0), ("rotation", 4, None), ("translation", 3, None)):
            v = nd.get(key)
            if v is None:
                continue
            if not isinstance(v, list) or len(v) != size or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v):
                raise ConvertError("%s.%s is not %d finite numbers" % (w, key, size))
            if key == "scale" and any(abs(x - 1) > 1e-6 for x in v):
                raise ConvertError("%s.scale is not 1" % w)
    for i, nd in enumerate(nodes):
        for c in _list(nd.get("children", []), "nodes[%d].children" % i, 34):
            c = _index(c, 34, "nodes[%d].children[]" % i)
            if c == i or parent[c] >= 0:
                raise ConvertError("nodes[%d] has two parents or is its own child" % c)
            parent[c] = i
    for i in range(34):
        at, hops = i, 0
        while parent[at] >= 0:
            at, hops = parent[at], hops + 1
            if hops > 34:
                raise ConvertError("the node hierarchy has a cycle through nodes[%d]" % i)
    for i, nd in enumerate(nodes):
        j = joint_of[i]
        pj = -1 if parent[i] < 0 else joint_of[parent[i]]
        if pj != parents[j]:
            raise ConvertError("node %s is not under its g1skel34 parent" % names[j])
        if j and "translation" in nd and np.abs(np.array(nd["translation"]) - (neutral[j] - neutral[parents[j]])).max() > 1e-3:
            raise ConvertError("%s: rest translation differs from the g1skel34 offset by more than 1 mm (no retargeting)" % names[j])
    root_node = joint_of.index(0)

    # the animation
    anims = _list(_get(doc, "animations", "glTF"), "animations", 1)
    if len(anims) != 1:
        raise ConvertError("animations must hold exactly one animation")
    samplers = _list(_get(anims[0], "samplers", "animations[0]"), "animations[0].samplers")
    channels = _list(_get(anims[0], "channels", "animations[0]"), "animations[0].channels")
    if len(channels) != 35:
        raise ConvertError("animations[0] has %d channels, a clip has 35 (root translation + 34 rotations)" % len(channels))
    rot, tr = {}, None
    for i, c in enumerate(channels):
        w = "animations[0].channels[%d]" % i
        s = _index(_get(_obj(c, w), "sampler", w), len(samplers), w + ".sampler")
        t = _obj(_get(c, "target", w), w + ".target")
        nd = _index(_get(t, "node", w + ".target"), 34, w + ".target.node")
        path = t.get("path")
        if path == "rotation" and joint_of[nd] not in rot:
            rot[joint_of[nd]] = s
        elif path == "translation" and nd == root_node and tr is None:
            tr = s
        else:
            raise ConvertError("%s: a repeated channel, a translation off the root, or a path other than rotation/translation" % w)
    if tr is None:
        raise ConvertError("no translation channel for the root")
    times = None

    def sample(si, comps, role):
        nonlocal times
        s = _obj(samplers[si], "animations[0].samplers[%d]" % si)
        if s.get("interpolation", "LINEAR") != "LINEAR":
            raise ConvertError("%s sampler is not LINEAR" % role)
        t = read(_index(_get(s, "input", "sampler"), len(accessors), "sampler.input"), 1, role + " times")[:, 0]
        if times is None:
            if not np.isfinite(t).all():
                raise ConvertError("a key time is not finite")
            if (np.diff(t) <= 0).any():
                raise ConvertError("key times are not strictly increasing")
            if (np.abs(t - t[0] - np.arange(len(t)) / FPS) > 1e-3).any():
                raise ConvertError("a clip is sampled at 30 fps")
            times = t
        elif t.shape != times.shape or (t != times).any():
            raise ConvertError("%s has its own time track; a clip shares one" % role)
        out = read(_index(_get(s, "output", "sampler"), len(accessors), "sampler.output"), comps, role)
        if out.shape[0] != times.shape[0]:
            raise ConvertError("%s: input and output counts differ" % role)
        return out

    root = sample(tr, 3, "root translation")
    quats = np.stack([sample(rot[j], 4, names[j] + " rotation") for j in range(34)], 1)
    if not np.isfinite(root).all() or np.abs(root).max() > 1e4:
        raise ConvertError("a root translation is not finite or beyond 1e4 m")
    norm = np.linalg.norm(quats, axis=-1)
    if not np.isfinite(quats).all() or (norm < 0.9).any() or (norm > 1.1).any():
        raise ConvertError("a rotation is not finite or its norm is outside 0.9..1.1")
    return root, quats / norm[..., None]
