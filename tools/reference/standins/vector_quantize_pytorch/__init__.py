"""Stand-in for vector_quantize_pytorch.VectorQuantize with a separate codebook per head, for
inference from a checkpoint: the codebook buffers (`_codebook.embed` [heads, size, dim],
`embed_avg`, `cluster_size`, `initted`), `codebook` and `get_codes_from_indices`, which looks
up each head's code and concatenates the heads (no projection: heads × codebook_dim = dim)."""

import torch

__version__ = "0-standin"


class _Codebook(torch.nn.Module):
    def __init__(self, heads, size, dim):
        super().__init__()
        self.register_buffer("initted", torch.tensor(True))
        self.register_buffer("cluster_size", torch.zeros(heads, size))
        self.register_buffer("embed_avg", torch.zeros(heads, size, dim))
        self.register_buffer("embed", torch.zeros(heads, size, dim))


class VectorQuantize(torch.nn.Module):
    def __init__(self, dim, codebook_size, codebook_dim=None, heads=1, separate_codebook_per_head=False, **kwargs):
        super().__init__()
        codebook_dim = codebook_dim or dim
        if not separate_codebook_per_head or codebook_dim * heads != dim:
            raise NotImplementedError("stand-in: only separate per-head codebooks with heads x codebook_dim = dim")
        self.heads = heads
        self._codebook = _Codebook(heads, codebook_size, codebook_dim)

    @property
    def codebook(self):
        return self._codebook.embed

    def get_codes_from_indices(self, indices):
        """indices [..., heads] → codes [..., heads × codebook_dim], head-major."""
        idx = indices.long()
        codes = [self._codebook.embed[h][idx[..., h]] for h in range(self.heads)]
        return torch.cat(codes, dim=-1)

    def forward(self, x):
        raise NotImplementedError("stand-in: quantisation (training) is not supported")
