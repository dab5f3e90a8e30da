"""torch ≥ 2 behaviours upstream MotionBricks relies on, applied only on torch < 2 (Debian 12
ships 1.13). Each is named in the manifest's environment.torch_backports."""

import torch


def _major():
    return int(torch.__version__.split(".")[0])


_applied = []


def apply():
    """Idempotent; returns the backports in force."""
    if _major() >= 2 or _applied:
        return list(_applied)
    done = _applied
    sched = torch.optim.lr_scheduler
    if not hasattr(sched, "LRScheduler"):
        # evaluated in the models' __init__ annotations; the public name of _LRScheduler since 2.0
        sched.LRScheduler = sched._LRScheduler
        done.append("torch.optim.lr_scheduler.LRScheduler (alias of _LRScheduler)")
    done.append(_padded_encoder_output())
    done.append(_int32_indices())
    return list(done)


def _padded_encoder_output():
    """In eval with a key padding mask, 1.13's nested-tensor fast path returns the output cut to
    the longest unpadded row; torch 2 pads it back to the input's length with zeros
    (to_padded_tensor(0., src.size())). Upstream's backbones index the full length."""
    original = torch.nn.TransformerEncoder.forward

    def forward(self, src, mask=None, src_key_padding_mask=None, **kwargs):
        out = original(self, src, mask=mask, src_key_padding_mask=src_key_padding_mask)
        if out.shape != src.shape:
            full = out.new_zeros(src.shape)
            full[tuple(slice(0, n) for n in out.shape)] = out
            out = full
        return out

    torch.nn.TransformerEncoder.forward = forward
    return "nn.TransformerEncoder fast path: output padded with zeros to the input length"


def _as_index(i):
    if isinstance(i, torch.Tensor) and i.dtype == torch.int32:
        return i.long()
    if isinstance(i, tuple):
        return tuple(_as_index(x) for x in i)
    if isinstance(i, list):
        return [_as_index(x) for x in i]
    return i


def _int32_indices():
    """torch 2 accepts int32 index tensors; 1.13 only long, byte and bool."""
    get, put = torch.Tensor.__getitem__, torch.Tensor.__setitem__
    torch.Tensor.__getitem__ = lambda self, i: get(self, _as_index(i))
    torch.Tensor.__setitem__ = lambda self, i, v: put(self, _as_index(i), v)
    return "int32 tensors as indices in Tensor.__getitem__/__setitem__"
