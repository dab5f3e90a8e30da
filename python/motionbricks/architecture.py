"""Expected tensor inventory of each bundle component as a function of its
hyper-parameters, and the reverse: hyper-parameters derived from tensor shapes.

Names are the stored (prefix-stripped, uncompacted) names; shapes are PyTorch
order. The converter derives hyper-parameters from its input, rebuilds the
expected inventory from them and requires an exact match, so a missing layer,
a stray tensor or an inconsistent width is caught before anything is written.
"""

import re

from . import constants as C
from .errors import ConvertError

# hyper-parameters of the published model (upstream configs at the release revision)
PRESET_FULL = {
    C.COMPONENT_POSE: {
        "n_embd": 1024, "n_layer": 16, "n_ff": 2048, "pose_feat_width": 640, "root_feat_width": 256,
        "token_length_feat_width": 128, "code_dim": 256, "n_mlp": 2,
    },
    C.COMPONENT_ROOT: {
        "n_embd": 512, "n_layer_shared": 3, "n_layer_root_token": 3, "n_ff": 2048, "width": 512, "depth": 4,
        "pose_feat_dim": 256, "local_root_feat_dim": 64, "global_root_feat_dim": 64, "n_mlp": 2,
    },
    C.COMPONENT_VQ_DECODER: {"code_dim": 256, "width": 512, "depth": 4, "n_out": C.LOCAL_FEATURE_DIM},
}

# the reduced configuration of ../shared/fixtures/reference-small (model_config.json overrides)
PRESET_SMALL = {
    C.COMPONENT_POSE: {
        "n_embd": 128, "n_layer": 2, "n_ff": 2048, "pose_feat_width": 128, "root_feat_width": 64,
        "token_length_feat_width": 32, "code_dim": 64, "n_mlp": 2,
    },
    C.COMPONENT_ROOT: {
        "n_embd": 64, "n_layer_shared": 1, "n_layer_root_token": 1, "n_ff": 2048, "width": 64, "depth": 2,
        "pose_feat_dim": 32, "local_root_feat_dim": 16, "global_root_feat_dim": 16, "n_mlp": 2,
    },
    C.COMPONENT_VQ_DECODER: {"code_dim": 64, "width": 64, "depth": 2, "n_out": C.LOCAL_FEATURE_DIM},
}

# heads and dilation growth of each preset (what shapes cannot tell)
PRESET_EXTRA = {
    "full": {"pose_heads": C.RELEASE_N_HEAD_POSE, "root_heads": C.RELEASE_N_HEAD_ROOT,
             "dilation_growth": C.RELEASE_DILATION_GROWTH},
    "small": {"pose_heads": 4, "root_heads": 4, "dilation_growth": C.RELEASE_DILATION_GROWTH},
}
PRESETS = {"full": PRESET_FULL, "small": PRESET_SMALL}

# what the converter accepts, as a multiple of the release: every derived hyper-parameter (widths,
# layer and block counts) at most 4x its release value, and the tensors of one conversion at most
# 4x the release's float32 bytes (183,148,382 parameters = 733 MB, so about 2.9 GB) read in total.
# Larger is not a MotionBricks model; refusing it up front keeps a hostile checkpoint from asking
# for gigabytes before anything is read
MAX_MULTIPLE_OF_RELEASE = 4
MAX_HPARAMS = {role: {k: MAX_MULTIPLE_OF_RELEASE * v for k, v in hp.items()} for role, hp in PRESET_FULL.items()}


def _w(prefix):
    return prefix + "." + C.WEIGHT


def _b(prefix):
    return prefix + "." + C.BIAS


def _linear(out, prefix, n_out, n_in):
    out[_w(prefix)] = (n_out, n_in)
    out[_b(prefix)] = (n_out,)


def _conv(out, prefix, n_out, n_in, kernel):
    out[_w(prefix)] = (n_out, n_in, kernel)
    out[_b(prefix)] = (n_out,)


def _transformer(out, prefix, n_layer, n_embd, n_ff):
    for il in range(n_layer):
        p = "%s.%d." % (prefix, il)
        out[p + C.LAYER_IN_PROJ_WEIGHT] = (3 * n_embd, n_embd)
        out[p + C.LAYER_IN_PROJ_BIAS] = (3 * n_embd,)
        out[p + C.LAYER_OUT_PROJ_WEIGHT] = (n_embd, n_embd)
        out[p + C.LAYER_OUT_PROJ_BIAS] = (n_embd,)
        _linear(out, p + C.LAYER_LINEAR1, n_ff, n_embd)
        _linear(out, p + C.LAYER_LINEAR2, n_embd, n_ff)
        for norm in (C.LAYER_NORM1, C.LAYER_NORM2):
            out[_w(p + norm)] = (n_embd,)
            out[_b(p + norm)] = (n_embd,)


def _mlp(out, prefix, n_layer, width, n_in, n_out):
    # upstream FCBlock: fc_layers (n_in -> width, then width -> width), forward_projection
    for il in range(n_layer):
        _linear(out, "%s.%s.%d" % (prefix, C.MLP_FC_LAYERS, il), width, n_in if il == 0 else width)
    _linear(out, "%s.%s" % (prefix, C.MLP_FORWARD_PROJECTION), n_out, width)


def _conv_layer(prefix, *idx):
    # name of a layer of a DoubleCondDecoder's main stack: prefix.model.i[.j...]
    return ".".join([prefix, C.CONV_MODEL] + [str(i) for i in idx])


def _cond_decoder(out, prefix, n_in, width, depth, n_out, target_cond_dim, external_cond_dim):
    # upstream DoubleCondDecoder with down_t = 2
    m = "%s.%s" % (prefix, C.CONV_MODEL)
    _conv(out, m + ".0", width, n_in, 3)
    for i in range(C.DOWN_T):
        for j in range(depth):
            blk = "%s.%d.0.%s.%d" % (m, 2 + i, C.CONV_MODEL, j)
            _conv(out, blk + "." + C.CONV_RES_CONV1, width, width, 3)
            _conv(out, blk + "." + C.CONV_RES_CONV2, width, width, 1)
        _conv(out, "%s.%d.2" % (m, 2 + i), width, width, 3)
    _conv(out, "%s.%d" % (m, 2 + C.DOWN_T), width, width, 3)
    _conv(out, "%s.%d" % (m, 4 + C.DOWN_T), n_out, width, 3)
    for i in range(C.DOWN_T):
        frames = 2 ** (C.DOWN_T - i)
        _linear(out, "%s.%s.%d" % (prefix, C.CONV_EXTERNAL_COND, 2 * i), width, frames * external_cond_dim + width)
        _linear(out, "%s.%s.%d" % (prefix, C.CONV_TARGET_COND, 2 * i), width // frames, target_cond_dim)


def expected_shapes(component, hp):
    """{stored name: PyTorch shape} of a learned component with hyper-parameters hp."""
    out = {}
    if component == C.COMPONENT_POSE:
        e = hp["n_embd"]
        pw, rw, tw, d = hp["pose_feat_width"], hp["root_feat_width"], hp["token_length_feat_width"], hp["code_dim"]
        _transformer(out, C.POSE_TRANSFORMER, hp["n_layer"], e, hp["n_ff"])
        out[C.POSE_TOKEN_EMB] = (C.N_CODE_HEADS * (C.N_CODES + 1), d // C.N_CODE_HEADS)
        _mlp(out, C.POSE_PROJ_TOKEN_EMB, hp["n_mlp"], pw, d, pw)
        _linear(out, C.POSE_PROJ_LOCAL_ROOT_VALUES, rw, (C.LOCAL_ROOT_DIM) * C.FRAMES_PER_TOKEN)
        _linear(out, C.POSE_PROJ_LOCAL_POSE, pw // C.FRAMES_PER_TOKEN, C.LOCAL_POSE_DIM)
        out[C.POSE_PROJ_NUM_VALID_POSITIONS] = (C.MAX_TOKENS - C.MIN_TOKENS + 1, tw)
        _linear(out, C.POSE_PROJ_INPUT, e, pw + rw + tw)
        out[C.POSE_POSITION_EMB] = (C.MAX_TOKENS, 1, e)
        _linear(out, C.POSE_PROJ_OUTPUT_LOGIT, C.N_CODE_HEADS * C.N_CODES, e)
    elif component == C.COMPONENT_ROOT:
        e = hp["n_embd"]
        pf, lf, gf = hp["pose_feat_dim"], hp["local_root_feat_dim"], hp["global_root_feat_dim"]
        _linear(out, C.ROOT_PROJ_LOCAL_POSE, pf, C.LOCAL_POSE_DIM)
        _linear(out, C.ROOT_PROJ_LOCAL_ROOT_VALUE, lf, C.LOCAL_ROOT_DIM)
        _linear(out, C.ROOT_PROJ_GLOBAL_ROOT_VALUE, gf, C.GLOBAL_ROOT_DIM)
        out[C.ROOT_NO_LOCAL_POSE_EMB] = (pf,)
        out[C.ROOT_NO_LOCAL_ROOT_EMB] = (lf,)
        out[C.ROOT_NO_GLOBAL_ROOT_EMB] = (gf,)
        out[C.ROOT_CONV_NO_FRAME_EMB] = (e,)
        _mlp(out, C.ROOT_PROJ_START_INPUT, hp["n_mlp"], e, pf + lf + gf, e)
        _mlp(out, C.ROOT_PROJ_END_INPUT, hp["n_mlp"], e, pf + lf + gf, e)
        out[C.ROOT_INPUT_POSITION_EMB] = (2 * C.FRAMES_PER_TOKEN, e)
        out[C.ROOT_PROJ_INPUT_NUM_TOKENS] = (C.N_NUM_TOKEN_INPUTS, e)
        out[C.ROOT_POSITION_EMB] = (C.MAX_TOKENS, 1, e)
        _linear(out, C.ROOT_PROJ_NUM_TOKEN_OUTPUT_LOGIT, C.N_NUM_TOKEN_CLASSES, e)
        out[C.ROOT_MIDDLE_TOKEN_EMB] = (C.N_NUM_TOKEN_CLASSES, e)
        _transformer(out, C.ROOT_SHARED_TRANSFORMER, hp["n_layer_shared"], e, hp["n_ff"])
        _transformer(out, C.ROOT_TOKEN_TRANSFORMER, hp["n_layer_root_token"], e, hp["n_ff"])
        _cond_decoder(out, C.ROOT_CONV_OUTPUT, e, hp["width"], hp["depth"], C.GLOBAL_ROOT_DIM,
                      C.GLOBAL_ROOT_DIM, e)
    elif component == C.COMPONENT_VQ_DECODER:
        d = hp["code_dim"]
        out[C.VQ_CODEBOOK] = (C.N_CODE_HEADS, C.N_CODES, d // C.N_CODE_HEADS)
        _cond_decoder(out, C.VQ_DECODER, d, hp["width"], hp["depth"], hp["n_out"], C.LOCAL_POSE_DIM,
                      C.DECODER_EXTERNAL_COND_DIM)
    else:
        raise ValueError("no learned inventory for component %r" % component)
    return out


def _need(shapes, component, name, ndim):
    s = shapes.get(name)
    if s is None:
        raise ConvertError("%s: missing tensor %r (needed to derive the hyper-parameters)" % (component, name))
    if len(s) != ndim:
        raise ConvertError("%s: tensor %r has shape %s, expected %d dimensions" % (component, name, list(s), ndim))
    return s


def _layer_indices(shapes, component, prefix):
    pat = re.compile(re.escape(prefix) + r"\.(\d+)\.")
    idx = set()
    for name in shapes:
        m = pat.match(name)
        if m:
            idx.add(int(m.group(1)))
    if not idx:
        raise ConvertError("%s: no layers found under %r" % (component, prefix))
    return idx


def _count_layers(shapes, component, prefix):
    # a gap shows up as missing tensors when the inventory is compared
    return max(_layer_indices(shapes, component, prefix)) + 1


def _n_ff(shapes, component, prefix):
    il = min(_layer_indices(shapes, component, prefix))
    return _need(shapes, component, "%s.%d.%s" % (prefix, il, _w(C.LAYER_LINEAR1)), 2)[0]


def derive_hparams(component, shapes):
    """Hyper-parameters of a learned component from {stored name: shape}."""
    if component == C.COMPONENT_POSE:
        return {
            "n_embd": _need(shapes, component, C.POSE_POSITION_EMB, 3)[2],
            "n_layer": _count_layers(shapes, component, C.POSE_TRANSFORMER),
            "n_ff": _n_ff(shapes, component, C.POSE_TRANSFORMER),
            "pose_feat_width": _need(shapes, component,
                                     _w(C.POSE_PROJ_TOKEN_EMB + "." + C.MLP_FORWARD_PROJECTION), 2)[0],
            "root_feat_width": _need(shapes, component, _w(C.POSE_PROJ_LOCAL_ROOT_VALUES), 2)[0],
            "token_length_feat_width": _need(shapes, component, C.POSE_PROJ_NUM_VALID_POSITIONS, 2)[1],
            "code_dim": _need(shapes, component, _w(C.POSE_PROJ_TOKEN_EMB + "." + C.MLP_FC_LAYERS + ".0"), 2)[1],
            "n_mlp": _count_layers(shapes, component, C.POSE_PROJ_TOKEN_EMB + "." + C.MLP_FC_LAYERS),
        }
    if component == C.COMPONENT_ROOT:
        return {
            "n_embd": _need(shapes, component, C.ROOT_POSITION_EMB, 3)[2],
            "n_layer_shared": _count_layers(shapes, component, C.ROOT_SHARED_TRANSFORMER),
            "n_layer_root_token": _count_layers(shapes, component, C.ROOT_TOKEN_TRANSFORMER),
            "n_ff": _n_ff(shapes, component, C.ROOT_SHARED_TRANSFORMER),
            "width": _need(shapes, component, _w(_conv_layer(C.ROOT_CONV_OUTPUT, 0)), 3)[0],
            "depth": _count_layers(shapes, component, _conv_layer(_conv_layer(C.ROOT_CONV_OUTPUT, 2, 0))),
            "pose_feat_dim": _need(shapes, component, C.ROOT_NO_LOCAL_POSE_EMB, 1)[0],
            "local_root_feat_dim": _need(shapes, component, C.ROOT_NO_LOCAL_ROOT_EMB, 1)[0],
            "global_root_feat_dim": _need(shapes, component, C.ROOT_NO_GLOBAL_ROOT_EMB, 1)[0],
            "n_mlp": _count_layers(shapes, component, C.ROOT_PROJ_START_INPUT + "." + C.MLP_FC_LAYERS),
        }
    if component == C.COMPONENT_VQ_DECODER:
        cb = _need(shapes, component, C.VQ_CODEBOOK, 3)
        return {
            "code_dim": cb[0] * cb[2],
            "width": _need(shapes, component, _w(_conv_layer(C.VQ_DECODER, 0)), 3)[0],
            "depth": _count_layers(shapes, component, _conv_layer(_conv_layer(C.VQ_DECODER, 2, 0))),
            "n_out": _need(shapes, component, _w(_conv_layer(C.VQ_DECODER, 4 + C.DOWN_T)), 3)[0],
        }
    raise ValueError("no hyper-parameters for component %r" % component)


def check_inventory(component, shapes):
    """Derives the hyper-parameters from shapes and requires the exact expected
    inventory; returns the hyper-parameters. Raises ConvertError naming every
    missing, unexpected or mis-shaped tensor (up to a few of each)."""
    hp = derive_hparams(component, shapes)
    for k, v in hp.items():
        if v <= 0:
            raise ConvertError("%s: derived %s = %d is not positive" % (component, k, v))
        cap = MAX_HPARAMS[component][k]
        if v > cap:
            raise ConvertError("%s: derived %s = %d is more than %d (%dx the release's %d)"
                               % (component, k, v, cap, MAX_MULTIPLE_OF_RELEASE, PRESET_FULL[component][k]))
    if component == C.COMPONENT_POSE:
        if hp["pose_feat_width"] % C.FRAMES_PER_TOKEN or hp["code_dim"] % C.N_CODE_HEADS:
            raise ConvertError("%s: pose_feat_width %d / code_dim %d not divisible by %d / %d"
                               % (component, hp["pose_feat_width"], hp["code_dim"], C.FRAMES_PER_TOKEN,
                                  C.N_CODE_HEADS))
    if component in (C.COMPONENT_ROOT, C.COMPONENT_VQ_DECODER) and hp["width"] % C.FRAMES_PER_TOKEN:
        raise ConvertError("%s: conv width %d not divisible by %d" % (component, hp["width"], C.FRAMES_PER_TOKEN))
    want = expected_shapes(component, hp)
    missing = sorted(set(want) - set(shapes))
    extra = sorted(set(shapes) - set(want))
    wrong = sorted(n for n in want if n in shapes and tuple(shapes[n]) != tuple(want[n]))
    problems = []
    if missing:
        problems.append("missing %d tensor(s): %s" % (len(missing), ", ".join(missing[:5])))
    if extra:
        problems.append("unexpected %d tensor(s): %s" % (len(extra), ", ".join(extra[:5])))
    for n in wrong[:5]:
        problems.append("tensor %r has shape %s, expected %s" % (n, list(shapes[n]), list(want[n])))
    if problems:
        raise ConvertError("%s: inventory does not match the architecture derived from its shapes %s: %s"
                           % (component, hp, "; ".join(problems)))
    return hp


def check_heads(component, hp, n_head, where):
    """The attention width must split evenly into n_head heads."""
    if n_head is not None and hp["n_embd"] % n_head:
        raise ConvertError("%s: %s n_embd %d is not divisible by %d heads" % (where, component, hp["n_embd"], n_head))


def parameter_count(shapes):
    n = 0
    for s in shapes.values():
        k = 1
        for d in s:
            k *= d
        n += k
    return n


def _release_bytes():
    return 4 * sum(parameter_count(expected_shapes(role, hp)) for role, hp in PRESET_FULL.items())


MAX_CONVERT_BYTES = MAX_MULTIPLE_OF_RELEASE * _release_bytes()
