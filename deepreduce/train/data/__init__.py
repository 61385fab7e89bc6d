"""Data sets for the main job, all read from real formats; nothing is ever downloaded.

``load_dataset(name, data_dir, seed)`` returns a ``Dataset``: tensors for training and testing
plus the facts a model needs (``meta``). Each worker then takes its own disjoint shard of the
training set with ``shard_batches``.
"""
from importlib import import_module

from .base import Dataset, DataNotFoundError
from .shard import generator, shard_batches, shard_indices, steps_per_epoch

DATASETS = ("digits", "cifar10", "cifar100", "imdb", "movielens")


def locate_dataset(name, data_dir=None):
    """Raise what ``load_dataset`` would for an unknown data set or one whose files are not
    in ``data_dir``, without reading them: the command line asks before it starts any
    worker, so that a missing folder is one line of error, not a worker's traceback."""
    if name not in DATASETS:
        raise ValueError(f"dataset={name!r} is unknown; valid names: {', '.join(DATASETS)}")
    if data_dir is None and name != "digits":  # digits comes with scikit-learn
        raise ValueError(f"dataset={name!r} is read from files: give the folder that holds them (data_dir=, "
                         "or --data-dir on the command line)")
    import_module(f".{name}", __name__).locate(data_dir)


def load_dataset(name, data_dir=None, seed=0):
    """Load data set ``name`` (one of ``DATASETS``); ``data_dir`` is needed for all but digits."""
    if name == "digits":
        from .digits import load_digits_dataset
        return load_digits_dataset()
    locate_dataset(name, data_dir)
    if name == "cifar10":
        from .cifar10 import load_cifar10
        return load_cifar10(data_dir)
    if name == "cifar100":
        from .cifar100 import load_cifar100
        return load_cifar100(data_dir)
    if name == "imdb":
        from .imdb import load_imdb
        return load_imdb(data_dir)
    from .movielens import load_movielens
    return load_movielens(data_dir, seed=seed)


__all__ = ["DATASETS", "Dataset", "DataNotFoundError", "generator", "load_dataset", "locate_dataset", "shard_batches",
           "shard_indices", "steps_per_epoch"]
