"""The ``deepreduce train`` command line: flags, per-data-set defaults, and the params dict."""
import argparse
import json
import math
import os

from .config import DATASET_DEFAULTS, DEFAULT_PARAMS, DENSE_PARAMS, LR_DECAYS, MODEL_NAMES, OPTIMIZERS, make_config

# Individual flags and the params keys they set.
PARAM_FLAGS = {"compressor": "compressor", "memory": "memory", "communicator": "communicator",
               "compress_ratio": "compress_ratio", "deepreduce": "deepreduce", "index": "index",
               "value": "value"}

EXAMPLES = """\
params dict:
  Built from --params (a JSON object or a .json file), or without it from the default
    %(default)s
  then the individual flags (--compressor ...), then every --param key=value, later ones
  winning; keys not given take GRACE's defaults (docs/params.md). Unless --no-baseline, a
  dense run %(dense)s
  is trained too, with the same seed, and the two are compared.
  The default (top-1%% with error feedback on digits, 20 epochs, 2 workers) takes about a
  minute on 2 cores and sends 2.3%% of the dense volume at about dense accuracy (96.7%% against
  dense 97.8%% when last measured).

per-data-set defaults:
%(table)s

examples:
  deepreduce train                                   # digits, 2 workers, top-1%% vs dense
  deepreduce train --compressor qsgd --memory none --communicator allgather
  deepreduce train --compress-ratio 0.01 --deepreduce index --index bloom --param fpr=0.001
  deepreduce train --dataset cifar10 --data-dir ~/data/cifar-10-batches-py --workers 4
  deepreduce train --dataset movielens --data-dir ~/data/ml-latest-small --epochs 5
  torchrun --nproc-per-node 2 -m deepreduce train    # or: mpirun -np 2 python -m deepreduce train
  mpiexec -n 4 python -m deepreduce train --dnn resnet20 --dataset cifar10 --data-dir DIR \\
      --compressor spardl --density 0.01             # SparDL's main_trainer.py flags

SparDL's flags: --dnn (= --model), --nworkers (= --workers), --max-epochs (= --epochs),
--density (= --compress-ratio), --compression (accepted: naming a compressor turns it on),
and --compressor spardl (= compressor topk, memory residual, communicator spardl).
"""


class _Once(argparse.Action):
    """An option given at most once: a second --params replaced the first, unsaid (one call
    trains one compressed configuration; deepreduce.train.run takes several)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"{option_string} was given twice: one call trains one params dict (put the keys of "
                         "both in one, or train several with deepreduce.train.run)")
        setattr(namespace, self.dest, values)


def _defaults_table():
    return "\n".join(f"  {name:<10} " + ", ".join(f"{k}={v}" for k, v in d.items())
                     for name, d in DATASET_DEFAULTS.items())


def _param(text):
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--param expects key=value, got {text!r}")
    if value in _PYTHON_WORDS:             # as a GRACE script writes them in its params dict
        return key, _PYTHON_WORDS[value]
    try:  # numbers, true/false, null, lists; NaN and Infinity are no JSON (log.json could not hold them)
        return key, json.loads(value, parse_constant=_not_json)
    except (json.JSONDecodeError, ValueError):
        pass
    for number in (int, float):            # .05, 5., 0127: as --compress-ratio and Python take them
        try:
            parsed = number(value)
        except ValueError:
            continue
        if math.isfinite(parsed):  # float() takes 'nan' and 'inf' too: those stay strings
            return key, parsed
    return key, value                      # anything else is a string


def _not_json(constant):
    raise ValueError(f"{constant} is not a JSON number")


_PYTHON_WORDS = {"True": True, "False": False, "None": None}


def params_argument(text):
    """A params dict given on a command line: a JSON object, or the path of a file holding
    one (``deepreduce train --params``, ``deepreduce fl --params/--c2s/--s2c``). argparse
    puts the flag's name before the messages."""
    source = text
    if os.path.isfile(text):
        with open(text) as f:
            source = f.read()
    try:
        params = json.loads(source)
    except json.JSONDecodeError as e:
        if source is text and not text.lstrip().startswith(("{", "[")):  # meant as a file's path
            raise argparse.ArgumentTypeError(f"{text!r}: no such file, and no JSON object either")
        raise argparse.ArgumentTypeError(f"neither a JSON object nor a JSON file: {e}")
    if not isinstance(params, dict):
        raise argparse.ArgumentTypeError("a params dict must be a JSON object such as "
                                         '\'{"compressor": "topk", "compress_ratio": 0.01}\'')
    return params


def _widths(text):
    try:
        widths = tuple(int(w) for w in text.split(","))
    except ValueError:
        widths = ()
    if not widths or min(widths) < 1:
        raise argparse.ArgumentTypeError(f"--hidden expects positive integers separated by "
                                         f"commas, e.g. 512,512; got {text!r}")
    return widths


def add_arguments(p):
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = EXAMPLES % {"default": json.dumps(DEFAULT_PARAMS), "dense": json.dumps(DENSE_PARAMS),
                           "table": _defaults_table()}
    g = p.add_argument_group("compression (the params dict given to grace_from_params)")
    g.add_argument("--params", type=params_argument, metavar="JSON", action=_Once,
                   help="params dict as a JSON object or a path to a .json file "
                        f"(default: {json.dumps(DEFAULT_PARAMS)})")
    g.add_argument("--compressor", help="GRACE compressor name, e.g. none, fp16, topk, randomk, "
                                        "threshold, qsgd; or spardl, SparDL's sparse all-reduce "
                                        "(default: topk)")
    g.add_argument("--memory", help="error-feedback memory: none, residual, ... (default: residual)")
    g.add_argument("--communicator", help="allreduce, allgather, broadcast (default: allgather)")
    g.add_argument("--compress-ratio", "--density", type=float, metavar="R", dest="compress_ratio",
                   help="fraction of elements kept by topk/randomk/spardl; --density is SparDL's "
                        "name for it (default: 0.01)")
    g.add_argument("--compression", action="store_true",
                   help="SparDL's switch for compression, accepted for its scripts: naming a "
                        "compressor turns compression on")
    g.add_argument("--deepreduce", choices=("value", "index", "both"),
                   help="wrap the compressor in a DeepReduce codec (default: off)")
    g.add_argument("--index", help="DeepReduce index codec, e.g. bloom, rle, huffman, ef "
                                   "(default when --deepreduce is set: bloom)")
    g.add_argument("--value", help="DeepReduce value codec, e.g. polyfit, qsgd, fp16 "
                                   "(default when --deepreduce is set: polyfit)")
    g.add_argument("--param", type=_param, action="append", default=[], metavar="KEY=VALUE",
                   help="any other params key; VALUE is parsed as JSON when it can be, and "
                        "True, False and None as Python writes them (repeatable, e.g. "
                        "--param fpr=0.001 --param policy=p0 --param gradient_clipping=True)")
    g.add_argument("--no-baseline", action="store_true",
                   help=f"skip the dense baseline run {json.dumps(DENSE_PARAMS)} (default: train it)")

    t = p.add_argument_group("training")
    t.add_argument("--dataset", choices=tuple(DATASET_DEFAULTS), default="digits",
                   help="digits is bundled with scikit-learn; the others are read from "
                        "--data-dir (default: digits)")
    t.add_argument("--data-dir", metavar="DIR",
                   help="folder with the CIFAR-10/100 python batches, IMDB's aclImdb folders "
                        "or MovieLens ratings.csv; "
                        "nothing is downloaded (default: none)")
    t.add_argument("--model", "--dnn", choices=MODEL_NAMES, dest="model",
                   help="cnn/mlp for digits, resnet20/vgg16/vgg19 for cifar10 and cifar100, "
                        "lstm for imdb, ncf for movielens; --dnn is SparDL's name "
                        "(default: per data set)")
    t.add_argument("--hidden", type=_widths, metavar="N[,N...]",
                   help="hidden layer widths of the mlp; wider layers mean more gradient bytes "
                        "per step for the same data, as benchmarks/limited_link.py needs "
                        "(default: 128,64)")
    t.add_argument("--fusion", type=int, default=0, metavar="BYTES",
                   help="tensor fusion: pack consecutive gradients into flat buckets of at most "
                        "BYTES, one grc.step per bucket, as Horovod's fusion buffer does; fewer, "
                        "larger tensors mean fewer frame headers and larger k for sparsifiers "
                        "(default: 0, one grc.step per parameter as in GRACE's scripts)")
    t.add_argument("--workers", "--nworkers", type=int, default=2, dest="workers",
                   help="local worker processes (gloo over loopback); ignored under torchrun "
                        "and mpirun, which set the world themselves (default: 2)")
    t.add_argument("--epochs", "--max-epochs", type=int, dest="epochs",
                   help="training epochs; --max-epochs is SparDL's name (default: per data set)")
    t.add_argument("--batch-size", type=int, help="samples per worker per step (default: per data set)")
    t.add_argument("--lr", type=float, help="learning rate (default: per data set)")
    t.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (default: 0.9)")
    t.add_argument("--weight-decay", type=float, help="L2 weight decay (default: per data set)")
    t.add_argument("--optimizer", choices=OPTIMIZERS, help="default: per data set")
    t.add_argument("--lr-decay", choices=LR_DECAYS,
                   help="step: multiply the lr by 0.1 after 50%% and 75%% of the epochs, as He et "
                        "al. train ResNet-20 (default: per data set)")
    t.add_argument("--seed", type=int, default=0,
                   help="seed for initialisation, shuffling and sampling (default: 0)")
    t.add_argument("--out", metavar="DIR",
                   help="output folder for log.json, epochs.csv, steps.csv, plot.png "
                        "(default: runs/<timestamp>)")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")


def build_params(args):
    params = dict(args.params if args.params is not None else DEFAULT_PARAMS)
    for flag, key in PARAM_FLAGS.items():
        value = getattr(args, flag)
        if value is not None:
            params[key] = value
    params.update(dict(args.param))
    if params.get("compressor") == "spardl":  # SparDL's own spelling of its method
        given = [source.get("communicator") for source in (args.params or {}, dict(args.param))] + [args.communicator]
        other = next((name for name in given if name not in (None, "spardl")), None)
        if other is not None:  # it was dropped unsaid
            raise ValueError(f"--compressor spardl is SparDL's sparse all-reduce, communicator spardl: "
                             f"leave out communicator {other!r}")
        params.update(compressor="topk", communicator="spardl",
                      memory=args.memory if args.memory is not None else "residual")
    return params


def config_from_args(args, launcher):
    runs = [("compressed", build_params(args))]
    if not args.no_baseline:
        runs.append(("dense", dict(DENSE_PARAMS)))
    overrides = {name: getattr(args, name) for name in DATASET_DEFAULTS[args.dataset]}
    return make_config(args.dataset, runs, launcher=launcher, out=args.out, progress=not args.no_progress,
                       data_dir=args.data_dir, momentum=args.momentum, seed=args.seed, hidden=args.hidden,
                       fusion=args.fusion, spell=lambda key: "--" + key.replace("_", "-"), **overrides)
