"""``deepreduce fl``: the options of a federated run, and the command itself."""
import argparse
from types import SimpleNamespace

from ..train.options import params_argument
from .settings import MODELS, OPTIMIZERS, S2C_READINGS, WEIGHTINGS, defaults
from .table import PAPER_ROWS, PAPER_TABLE4_SECONDS

DESCRIPTION = """\
Federated learning with compression both ways (FedAvg, DeepReduce's Algorithm 2): a server
and --clients simulated clients; each round --per-round of them are sampled, receive the
server's update (server-to-client, S2C), train --local-epochs epochs on their own data and
send their model change back (client-to-server, C2S). Each direction takes a GRACE /
DeepReduce params dict (--c2s, --s2c; --params sets both), with error feedback per client
and at the server, each switchable. Models: mobilenet or cnn on the embedded digits
(split by Dirichlet(--alpha) over the labels, or --alpha iid), lstm (the paper's 4,053,428-
parameter next-word model on a generated corpus). Clients run multiplexed in this process,
or with --processes P in P gloo processes (server + P-1 client hosts). Prints the paper's
table (encode/decode seconds, S2C/C2S seconds at 100 Mbit/s and 1 Gbit/s, relative volume
each way, accuracy) and the per-round time model; --out writes log.json and plot.png.
See docs/federated.md."""

EPILOG = """\
examples:
  deepreduce fl --rows paper --rounds 20                    # Table 5's rows on MobileNet/digits
  deepreduce fl --params '{"compressor": "topk", "compress_ratio": 0.1, "memory": "residual",
                 "deepreduce": "both", "index": "rice", "value": "qsgd"}' --clients 16 --per-round 8
  deepreduce fl --model lstm --rows paper --rounds 5 --clients 8 --per-round 4
  deepreduce fl --c2s '{"compressor": "topk", "compress_ratio": 0.1}' --no-c2s-ef --s2c-update round"""


def _alpha(text):
    if text.lower() == "iid":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--alpha takes a positive number or 'iid', got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"--alpha must be > 0 (or 'iid'), got {text!r}")
    return value


def add_arguments(parser):
    d = SimpleNamespace(**defaults())
    add = parser.add_argument
    add("--model", choices=MODELS, default=d.model, help="mobilenet/cnn: digits; lstm: generated text (default %(default)s)")
    add("--clients", type=int, default=d.clients, help="simulated clients (default %(default)s)")
    add("--per-round", type=int, default=None, help="clients sampled per round (default: all)")
    add("--rounds", type=int, default=d.rounds, help="rounds (default %(default)s)")
    add("--local-epochs", type=int, default=d.local_epochs, help="E, local epochs per round (default %(default)s)")
    add("--batch-size", type=int, default=d.batch_size, help="local batch size (default %(default)s)")
    add("--lr", type=float, default=d.lr, help="client learning rate (default %(default)s)")
    add("--optimizer", choices=OPTIMIZERS, default=d.optimizer, help="client optimizer (default %(default)s)")
    add("--alpha", type=_alpha, default=d.alpha, help="Dirichlet concentration of the non-IID split, or 'iid' "
                                                      "(default %(default)s)")
    add("--params", type=params_argument, default=None,
        help="params dict of both directions (a JSON object, or a JSON file's path)")
    add("--c2s", type=params_argument, default=None,
        help="client-to-server params dict (as --params; default: --params, else dense)")
    add("--s2c", type=params_argument, default=None,
        help="server-to-client params dict (as --params; default: --params, else dense)")
    add("--rows", choices=["paper"], default=None,
        help="run the paper's rows (baseline, top-r 10%%, DR(∅,BF-P0), DR(Fit-Poly,∅), DR(QSGD,BF-P0), ours)")
    for side, who in (("c2s", "each client's"), ("s2c", "the server's")):
        add(f"--{side}-ef", dest=f"{side}_ef", action=argparse.BooleanOptionalAction, default=None,
            help=f"{who} error feedback (default: the params dict's memory; the paper's rows: on)")
    add("--s2c-update", choices=S2C_READINGS, default=d.s2c_update,
        help="the server sends its change since the client's last round ('client') or since the previous "
             "round ('round'; missed rounds are sent too) (default %(default)s)")
    add("--weighting", choices=WEIGHTINGS, default=d.weighting,
        help="average client updates by example count or uniformly (Algorithm 2) (default %(default)s)")
    add("--server-lr", type=float, default=d.server_lr, help="server step on the average (default %(default)s)")
    add("--compress-1d", action="store_true", help="compress tensors of one dimension too (paper: dense)")
    add("--sentences", type=int, default=d.sentences, help="lstm: training sentences per client (default %(default)s)")
    add("--seed", type=int, default=d.seed, help="data split, model, sampling and shuffles (default %(default)s)")
    add("--eval-every", type=int, default=d.eval_every, help="rounds between test evaluations (default %(default)s)")
    add("--processes", type=int, default=0,
        help="0: every client in this process; P >= 2: gloo processes, a server and P-1 client hosts")
    add("--no-baseline", action="store_true", help="skip the uncompressed FedAvg run")
    add("--threads", type=int, default=1, help="torch threads in this process; 0 leaves torch's own setting "
                                               "(default %(default)s)")
    add("--out", default=None, help="folder for log.json and plot.png")


def runs_from_args(args):
    """{label: params or {'c2s':..., 's2c':...}} the arguments ask for."""
    if args.rows == "paper":
        if args.params or args.c2s or args.s2c:
            raise ValueError("--rows paper runs the paper's params dicts; leave out --params/--c2s/--s2c")
        return {label: params for label, params in PAPER_ROWS.items() if label != "baseline"}
    if not (args.params or args.c2s or args.s2c):  # nothing to compress: the baseline alone
        if args.no_baseline:
            raise ValueError("nothing to run: give --params, --c2s/--s2c or --rows paper, or drop --no-baseline")
        return {"baseline": {"compressor": "none"}}
    both = args.params or {"compressor": "none"}
    c2s, s2c = args.c2s or both, args.s2c or both
    return {"compressed": {"c2s": c2s, "s2c": s2c}}


def command(args):
    from .api import run
    settings = {key: getattr(args, key) for key in (
        "model", "clients", "per_round", "rounds", "local_epochs", "batch_size", "lr", "optimizer", "alpha",
        "c2s_ef", "s2c_ef", "s2c_update", "weighting", "server_lr", "compress_1d", "sentences", "seed",
        "eval_every")}
    if args.rows == "paper":  # the paper's rows run with error feedback both ways unless told
        settings["c2s_ef"] = True if args.c2s_ef is None else args.c2s_ef
        settings["s2c_ef"] = True if args.s2c_ef is None else args.s2c_ef

    def progress(rec):
        metric = "" if rec.metric is None else f" accuracy {rec.metric:.4f}"
        print(f"  round {rec.round}: {rec.wall_seconds:.2f}s{metric}", flush=True)
    results = run(runs_from_args(args), processes=args.processes, baseline=not args.no_baseline,
                  threads=args.threads, out=args.out, progress=progress, **settings)
    print(results.table(title=f"deepreduce fl: {args.model}, {args.clients} clients, {args.rounds} rounds",
                        # the paper's times are its LSTM's (Table 4): beside another model's, noise
                        paper=PAPER_TABLE4_SECONDS if args.rows == "paper" and args.model == "lstm" else None))
