"""The settings of a federated run (no torch import here, so the ``deepreduce`` command's
parser stays light)."""
from dataclasses import MISSING, dataclass, field, fields

import numpy as np

from ..checks import number

MODELS = ("mobilenet", "cnn", "lstm")
OPTIMIZERS = ("sgd", "adam")
DENSE = {"compressor": "none", "memory": "none"}
S2C_READINGS = ("client", "round")
WEIGHTINGS = ("samples", "uniform")


@dataclass(frozen=True)
class Settings:
    """One federated run. ``c2s`` and ``s2c`` are GRACE/DeepReduce params dicts; the ``*_ef``
    switches turn error feedback on or off (None: the params dict's ``memory`` decides).
    Checked once, when made (a bad value or params dict raises here, before any round),
    and frozen after, so every runner takes it as checked."""
    model: str = "mobilenet"
    clients: int = 10
    per_round: int = None           # clients sampled per round; None: all of them
    rounds: int = 20
    local_epochs: int = 1
    batch_size: int = 32
    lr: float = 0.2
    optimizer: str = "sgd"
    alpha: float = 0.5              # Dirichlet concentration; None: IID
    c2s: dict = field(default_factory=lambda: dict(DENSE))
    s2c: dict = field(default_factory=lambda: dict(DENSE))
    c2s_ef: bool = None
    s2c_ef: bool = None
    s2c_update: str = "client"
    weighting: str = "samples"
    server_lr: float = 1.0
    compress_1d: bool = False
    seed: int = 0
    eval_every: int = 1
    sentences: int = 64             # text model: training sentences per client

    def __post_init__(self):
        if self.model not in MODELS:
            raise ValueError(f"model={self.model!r} is unknown; valid: {', '.join(MODELS)}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer={self.optimizer!r} is unknown; valid: {', '.join(OPTIMIZERS)}")
        for key in ("clients", "rounds", "local_epochs", "batch_size", "eval_every", "sentences"):
            value = getattr(self, key)
            if not is_count(value) or value < 1:
                raise ValueError(f"{key}={value!r} must be a positive integer")
        if not is_count(self.seed) or not 0 <= self.seed < 2 ** 63:  # torch's generators take 63 bits
            raise ValueError(f"seed={self.seed!r} must be an integer in [0, 2**63)")
        if self.per_round is not None and not (is_count(self.per_round) and 1 <= self.per_round <= self.clients):
            raise ValueError(f"per_round={self.per_round!r} must be an integer between 1 and clients={self.clients} "
                             "(or None: every client)")
        if self.s2c_update not in S2C_READINGS:
            raise ValueError(f"s2c_update={self.s2c_update!r}; valid: {', '.join(S2C_READINGS)} "
                             "(the change since the client's last round, or since the previous round)")
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"weighting={self.weighting!r}; valid: {', '.join(WEIGHTINGS)}")
        if self.alpha is not None:
            number(self.alpha, "alpha (or None for an IID split)", 0, low_open=True)
        number(self.lr, "lr", 0, low_open=True)
        number(self.server_lr, "server_lr", 0, low_open=True)
        from .direction import Direction  # torch: imported when Settings are made, not with this module
        Direction(self.c2s, self.c2s_ef, self.compress_1d, "c2s")  # a bad params dict fails here
        Direction(self.s2c, self.s2c_ef, self.compress_1d, "s2c")

    @property
    def sampled(self):
        return self.clients if self.per_round is None else self.per_round


def is_count(value):
    """An integer and not a bool (True would count as 1 client, 2.5 failed in the first
    round's sampling)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def defaults():
    """{setting: default} of the settings that have a plain default (not the params
    dicts), without making a Settings: making one checks it, which imports torch."""
    return {f.name: f.default for f in fields(Settings) if f.default is not MISSING}
