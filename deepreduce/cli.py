"""The ``deepreduce`` command: ``deepreduce train ...`` and ``deepreduce fl ...`` (also
``python -m deepreduce ...``)."""
import argparse
import sys


def _needs_torch(command):
    """PyTorch, or a one-line error saying how to install it (``pip install deepreduce``
    alone leaves it out: the package's core needs only NumPy and cffi)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ValueError(f"deepreduce {command} trains with PyTorch, which is not installed: "
                         "pip install 'deepreduce[train]'") from None


def _train(args):
    _needs_torch("train")
    from .checks import output_folder
    from .train.data import DataNotFoundError, locate_dataset
    from .train.launch import detect, launch, launched_rank, launched_size
    from .train.loop import check_communicator, run_worker
    from .train.options import config_from_args

    launcher = detect()
    cfg = config_from_args(args, launcher)
    # Build each communicator once here, and look for the data set's files, so that a bad
    # params dict or a missing folder fails before any worker starts.
    workers = launched_size(args.workers)
    for label, params in cfg.runs:
        check_communicator(params, workers, launcher)
    try:
        locate_dataset(cfg.dataset, cfg.data_dir)
    except DataNotFoundError as e:
        raise ValueError(str(e)) from None
    if launched_rank() == 0:
        # Made now: the results are written after all the training, by rank 0 alone. (The
        # other ranks' own default, a timestamp of their own, left empty folders.)
        output_folder(cfg.out, "--out")
    if launch(run_worker, args.workers, cfg) in ("torchrun", "mpirun"):
        from .train.launch import leave
        leave()  # this process is a worker: leave as a spawned one does


def _fl(args):
    _needs_torch("fl")
    from .fl.cli import command
    command(args)


def build_parser():
    from .fl import cli as fl_cli
    from .train.options import add_arguments

    parser = argparse.ArgumentParser(prog="deepreduce",
                                     description="Compressed gradient communication for "
                                                 "distributed deep learning.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    train = sub.add_parser(
        "train", help="data-parallel training with a params dict, compared with dense",
        description="Train a model data-parallel on local workers with a GRACE/DeepReduce "
                    "params dict and compare it with a dense baseline: accuracy, bytes sent, "
                    "wall time. Writes log.json, epochs.csv, steps.csv and plot.png.")
    add_arguments(train)
    train.set_defaults(func=_train)
    fl = sub.add_parser("fl", help="federated learning (FedAvg) with two-way compression",
                        description=fl_cli.DESCRIPTION, epilog=fl_cli.EPILOG,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    fl_cli.add_arguments(fl)
    fl.set_defaults(func=_fl)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    from .errors import ParameterTypeError
    try:
        args.func(args)
    except (ValueError, ParameterTypeError) as e:
        # Bad arguments or params: one clear line, not a traceback.
        parser.exit(2, f"deepreduce {args.command}: error: {e}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
