"""Stand-in for einops: pack/unpack (one `*`), rearrange/repeat over named axes with
parenthesised groups, `1` unit axes and, for repeat, new axes sized by keyword."""

import math
import re

__version__ = "0-standin"


def _parse(side):
    groups, cur = [], None
    for tok in re.findall(r"\(|\)|[A-Za-z_][A-Za-z0-9_]*|1|\*|\.\.\.", side):
        if tok == "(":
            cur = []
        elif tok == ")":
            groups.append(cur)
            cur = None
        elif cur is not None:
            cur.append(tok)
        else:
            groups.append([tok])
    return groups


def _transform(x, pattern, sizes, allow_new):
    left, right = (s.strip() for s in pattern.split("->"))
    lg, rg = _parse(left), _parse(right)
    if len(lg) != x.ndim:
        raise ValueError(f"einops stand-in: pattern {pattern!r} expects {len(lg)} axes, got {x.ndim}")
    known = dict(sizes)
    for group, dim in zip(lg, x.shape):
        names = [n for n in group if n != "1"]
        unknown = [n for n in names if n not in known]
        prod = math.prod(known[n] for n in names if n in known)
        if len(unknown) > 1:
            raise ValueError(f"einops stand-in: cannot infer {unknown} in {pattern!r}")
        if unknown:
            known[unknown[0]] = dim // prod
        elif prod != dim:
            raise ValueError(f"einops stand-in: axis of {dim} does not match {group} in {pattern!r}")
    elems = [n for g in lg for n in g if n != "1"]
    x = x.reshape([known[n] for n in elems])
    out = [n for g in rg for n in g if n != "1"]
    new = [n for n in out if n not in elems]
    if new and not allow_new:
        raise ValueError(f"einops stand-in: new axes {new} in rearrange {pattern!r}")
    x = x.permute([elems.index(n) for n in out if n in elems]) if elems else x
    present = [n for n in out if n in elems]
    for i, n in enumerate(out):
        if n not in present:
            x = x.unsqueeze(i)
            present.insert(i, n)
    x = x.expand([known[n] for n in out])
    return x.reshape([math.prod(known[n] for n in g if n != "1") for g in rg])


def rearrange(x, pattern, **sizes):
    return _transform(x, pattern, sizes, allow_new=False)


def repeat(x, pattern, **sizes):
    return _transform(x, pattern, sizes, allow_new=True).contiguous()


def _star(pattern):
    names = pattern.split()
    i = names.index("*")
    return i, len(names) - i - 1


def pack(tensors, pattern):
    import torch
    before, after = _star(pattern)
    shapes, flat = [], []
    for t in tensors:
        star = tuple(t.shape[before:t.ndim - after])
        shapes.append(star)
        flat.append(t.reshape(list(t.shape[:before]) + [math.prod(star)] + list(t.shape[t.ndim - after:])))
    return torch.cat(flat, dim=before), shapes


def unpack(tensor, shapes, pattern):
    before, after = _star(pattern)
    parts = tensor.split([math.prod(s) for s in shapes], dim=before)
    return [p.reshape(list(p.shape[:before]) + list(s) + list(p.shape[p.ndim - after:])) for p, s in zip(parts, shapes)]
