"""What every loader returns, and the error raised when the files are not there."""
from dataclasses import dataclass, field
from typing import Callable, Optional, Tuple

import torch


class DataNotFoundError(FileNotFoundError):
    """The data set's files are missing; the message says which, where, and how to get them."""


@dataclass
class Dataset:
    """Tensors for one data set, indexed along dim 0.

    ``task`` is 'classify' (train = (x, y), test = (x, y)) or 'rank' (implicit-feedback
    recommendation: train = (user, item, label), test = (user, candidates) with the held-out
    positive in candidate column 0). ``meta`` carries the shapes a model needs.
    """
    name: str
    task: str
    train: Tuple[torch.Tensor, ...]
    test: Tuple[torch.Tensor, ...]
    meta: dict = field(default_factory=dict)
    # Per-batch training augmentation, called as augment(x, generator); None for no augmentation.
    augment: Optional[Callable] = None
    # When set, the training tensors change per epoch (e.g. fresh negative samples):
    # resample(epoch) returns them. Every rank computes the same tensors from the same seed.
    resample: Optional[Callable[[int], Tuple[torch.Tensor, ...]]] = None

    def train_tensors(self, epoch):
        return self.resample(epoch) if self.resample is not None else self.train

    @property
    def num_train(self):
        return len(self.train[0])

    @property
    def num_test(self):
        return len(self.test[0])
