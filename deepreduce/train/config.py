"""A training job's configuration, and the defaults the command line and the Python API
start from."""
import math
import numbers
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Optional

# Chosen so the no-flag run finishes in about a minute on 2 cores and shows a large volume
# saving at close-to-dense accuracy: top-1% sparsification with error feedback (residual
# memory); top-k payloads differ per rank, so they travel by allgather.
DEFAULT_PARAMS = {"compressor": "topk", "memory": "residual", "communicator": "allgather",
                  "compress_ratio": 0.01}
DENSE_PARAMS = {"compressor": "none", "memory": "none", "communicator": "allreduce"}

# The names deepreduce.train.models.MODELS builds, with the data sets each can train on (its
# builder refuses the others' data); kept here so `--help` and the checks before any worker
# starts need not import torch.
_IMAGES = ("digits", "cifar10", "cifar100")
MODEL_DATA_SETS = {"cnn": _IMAGES, "mlp": _IMAGES, "resnet20": _IMAGES, "ncf": ("movielens",),
                   "vgg16": ("cifar10", "cifar100"), "vgg19": ("cifar10", "cifar100"), "lstm": ("imdb",)}
MODEL_NAMES = tuple(MODEL_DATA_SETS)

# Training defaults per data set (any flag given on the command line wins).
OPTIMIZERS = ("sgd", "adam")
LR_DECAYS = ("none", "step")  # step: x0.1 at half and three quarters of the epochs

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
    # Tensor fusion: consecutive gradients are packed into flat buckets of at most this many
    # bytes, one grc.step per bucket (as Horovod's fusion buffer and DDP's buckets do); 0
    # keeps GRACE's one call per parameter.
    fusion: int = 0
    # (label, params dict) per run, trained one after the other in the same workers.
    runs: list = field(default_factory=list)
    progress: bool = True
    launcher: str = "spawn"
    # Rank 0 prints stage changes and the summary table (the command line); the Python API
    # returns them as objects instead (a worker's output is not the notebook cell's).
    prints: bool = True

    def to_dict(self):
        return asdict(self)


def make_config(dataset, runs, *, launcher="spawn", out=None, progress=True, prints=True,
                data_dir=None, momentum=0.9, seed=0, hidden=None, fusion=0, spell=lambda key: key,
                **overrides):
    """A TrainConfig for ``runs`` ((label, params) pairs) on ``dataset``: the data set's
    defaults (DATASET_DEFAULTS) with ``overrides`` (None leaves a default), checked.
    ``spell`` names a setting in error messages (the command line spells them as flags,
    the Python API as keywords)."""
    if dataset not in DATASET_DEFAULTS:
        raise ValueError(f"unknown dataset {dataset!r}; valid: {', '.join(DATASET_DEFAULTS)}")
    defaults = DATASET_DEFAULTS[dataset]
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        raise ValueError(f"unknown training setting(s) {', '.join(unknown)}; valid: "
                         f"{', '.join(sorted(set(defaults) | {'data_dir', 'momentum', 'seed', 'hidden', 'fusion'}))}")
    pick = {k: overrides[k] if overrides.get(k) is not None else v for k, v in defaults.items()}
    for name in ("epochs", "batch_size"):
        value = pick[name]
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{spell(name)}={value!r} must be a whole number >= 1")
    for name, valid in (("optimizer", OPTIMIZERS), ("lr_decay", LR_DECAYS)):
        if not isinstance(pick[name], str) or pick[name] not in valid:
            raise ValueError(f"{spell(name)}={pick[name]!r} is unknown; valid: {', '.join(valid)}")
    # What the optimizer and the seed's generator would refuse, or turn into a NaN model
    # (an infinite lr, decay or momentum trained to NaN and exited 0), said before any
    # worker starts.
    for name, value, kind, positive in (("lr", pick["lr"], numbers.Real, True),
                                        ("weight_decay", pick["weight_decay"], numbers.Real, False),
                                        ("momentum", momentum, numbers.Real, False)):
        if isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value) or \
                not (value > 0 if positive else value >= 0):
            raise ValueError(f"{spell(name)}={value!r} must be a finite number {'> 0' if positive else '>= 0'}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**64:
        # torch.manual_seed takes 64 bits: a larger seed failed in every worker, unnamed
        raise ValueError(f"{spell('seed')}={seed!r} must be an integer from 0 to 2**64 - 1")
    if pick["model"] not in MODEL_NAMES:
        raise ValueError(f"unknown model {pick['model']!r}; valid: {', '.join(MODEL_NAMES)}")
    if dataset not in MODEL_DATA_SETS[pick["model"]]:
        raise ValueError(f"model {pick['model']!r} trains on {', '.join(MODEL_DATA_SETS[pick['model']])}, not "
                         f"{dataset!r}; leave out {spell('model')} for {dataset}'s default, {defaults['model']!r}")
    if hidden is not None and pick["model"] != "mlp":
        raise ValueError(f"{spell('hidden')} sets the mlp's layer widths; model {pick['model']!r} "
                         f"has none to set (add {spell('model')} mlp)")
    if isinstance(fusion, bool) or not isinstance(fusion, int) or fusion < 0:
        raise ValueError(f"{spell('fusion')}={fusion!r} must be a whole number of bytes >= 0 "
                         "(0: one grc.step per parameter)")
    if not runs:
        raise ValueError("no runs to train: give at least one params dict")
    out = out or os.path.join("runs", time.strftime("%Y%m%d-%H%M%S"))
    return TrainConfig(dataset=dataset, data_dir=data_dir, momentum=momentum, seed=seed, hidden=hidden,
                       fusion=fusion, out=out, runs=list(runs), progress=progress, launcher=launcher,
                       prints=prints, **pick)
