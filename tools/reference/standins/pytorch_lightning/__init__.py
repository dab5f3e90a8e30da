"""Stand-in for pytorch_lightning: LightningModule as a plain nn.Module (inference only:
logging is a no-op) and seed_everything."""

import random

import numpy as np
import torch

__version__ = "0-standin"


class LightningModule(torch.nn.Module):
    def log(self, *args, **kwargs):
        pass

    @property
    def device(self):
        for p in self.parameters():
            return p.device
        return torch.device("cpu")


def seed_everything(seed=None, workers=False):
    seed = int(seed or 0)
    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    torch.manual_seed(seed)
    return seed
