"""A training job's configuration, and the defaults the command line starts from."""
from dataclasses import asdict, dataclass, field
from typing import Optional

# Chosen so the no-flag run finishes in about a minute on 2 cores and shows a large volume
# saving at close-to-dense accuracy: top-1% sparsification with error feedback (residual
# memory); top-k payloads differ per rank, so they travel by allgather.
DEFAULT_PARAMS = {"compressor": "topk", "memory": "residual", "communicator": "allgather",
                  "compress_ratio": 0.01}
DENSE_PARAMS = {"compressor": "none", "memory": "none", "communicator": "allreduce"}

# The names deepreduce.train.models.MODELS builds; kept here so `--help` need not import torch.
MODEL_NAMES = ("cnn", "mlp", "resnet20", "ncf", "vgg16", "vgg19", "lstm")

# Training defaults per data set (any flag given on the command line wins).
DATASET_DEFAULTS = {
    "digits": dict(model="cnn", epochs=20, batch_size=32, lr=0.05, optimizer="sgd",
                   weight_decay=0.0, lr_decay="step"),
    "cifar10": dict(model="resnet20", epochs=160, batch_size=64, lr=0.1, optimizer="sgd",
                    weight_decay=1e-4, lr_decay="step"),
    "cifar100": dict(model="vgg16", epochs=160, batch_size=64, lr=0.1, optimizer="sgd",
                     weight_decay=5e-4, lr_decay="step"),
    "imdb": dict(model="lstm", epochs=10, batch_size=64, lr=1e-3, optimizer="adam",
                 weight_decay=0.0, lr_decay="none"),
    "movielens": dict(model="ncf", epochs=10, batch_size=256, lr=1e-3, optimizer="adam",
                      weight_decay=0.0, lr_decay="none"),
}


@dataclass
class TrainConfig:
    """Everything a worker needs; built by the CLI, pickled to spawned workers."""
    dataset: str
    model: str
    epochs: int
    batch_size: int
    lr: float
    optimizer: str
    weight_decay: float
    lr_decay: str
    out: str
    momentum: float = 0.9
    seed: int = 0
    data_dir: Optional[str] = None
    # The mlp's hidden layer widths; None keeps the model's own (128, 64).
    hidden: Optional[tuple] = None
    # (label, params dict) per run, trained one after the other in the same workers.
    runs: list = field(default_factory=list)
    progress: bool = True
    launcher: str = "spawn"

    def to_dict(self):
        return asdict(self)
