"""DeepReduce's federated tables re-derived (paper Tables 2, 4 and 5; Figs. 6, 18, 20, 21):
FedAvg with top-r 10% and DeepReduce both ways, error feedback at every client and at the
server, per configuration: client/server encode and decode seconds, S2C and C2S seconds at
100 Mbit/s and 1 Gbit/s (bytes / link rate), relative volume each way, accuracy; then the
per-round time model and its speedups over top-r and the baseline.

1. ``lstm``: the paper's 4,053,428-parameter next-word LSTM on the generated corpus
   (deepreduce.fl.text), 8 clients of 128 sentences, 4 sampled per round, batch 16 (the
   paper's), E = 1, lr 1.0 (the paper's 0.3 learns the generated language too slowly for a
   10-round run). The volumes and codec times are the paper's quantities; the accuracy is
   that of a few rounds on generated text, not Stack Overflow's.
2. ``mobilenet``: the MobileNet-style CNN on the embedded digits, 10 clients split by
   Dirichlet(0.5) over the labels (the paper's LDA split of Table 5), all sampled, E = 1.
3. ``--link 100mbit`` (root): the LSTM rows again in 3 gloo processes (a server, two
   client hosts) inside benchmarks/limited_link.py's network namespace, whose loopback is
   a real ``tc tbf`` link: the measured round time beside the model's (one link shared by
   every message, so the model there is the sum of the round's bytes / rate).

    python benchmarks/federated.py [--parts lstm mobilenet] [--out docs/federated]
    python benchmarks/federated.py --parts link --link 100mbit      # as root
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

import deepreduce.fl as fl
from deepreduce.fl.table import PAPER_ROWS, PAPER_TABLE4_SECONDS, PAPER_VOLUMES, mean

LSTM = dict(model="lstm", clients=8, per_round=4, sentences=128, lr=1.0, batch_size=16, c2s_ef=True, s2c_ef=True)
MOBILENET = dict(model="mobilenet", clients=10, alpha=0.5, c2s_ef=True, s2c_ef=True)
MARGIN = 0.03  # accuracy a compressed MobileNet row may trail uncompressed FedAvg by (the test's)
PAPER_TABLE5 = {"baseline": (1.0, 0.8817), "top-r 10%": (0.2069, 0.8708), "DR(Fit-Poly, ∅)": (0.1087, 0.8700),
                "DR(∅, BF-P0)": (0.1475, 0.8758), "DR(QSGD, BF-P0)": (0.0713, 0.8740)}


def rows_to_run():
    return {label: params for label, params in PAPER_ROWS.items() if label != "baseline"}


def paper_lstm(args, out):
    results = fl.run(rows_to_run(), rounds=args.lstm_rounds, seed=args.seed, out=out / "lstm",
                     progress=_progress("lstm"), **LSTM)
    table = results.table(title=f"LSTM (4,053,428 parameters), generated text, {LSTM['clients']} clients, "
                                f"{LSTM['per_round']} per round, {args.lstm_rounds} rounds", paper=PAPER_TABLE4_SECONDS)
    lines = [table, "", f"{'relative volume':<22} {'ours C2S':>9} {'paper':>7} {'ratio':>6} | accuracy, mean of the last 3 rounds"]
    for run, row in zip(results, results.rows()):
        paper = PAPER_VOLUMES.get(row.label)
        last = [r.metric for r in run.rounds if r.metric is not None][-3:]
        lines.append(f"{row.label:<22} {row.c2s_volume:9.4f} " +
                     (f"{paper:7.4f} {row.c2s_volume / paper:6.3f}" if paper else f"{'':>7} {'':>6}") +
                     f" | {sum(last) / len(last):.4f}")
    volumes = {row.label: row.c2s_volume for row in results.rows()}
    within = all(abs(volumes[label] / paper - 1) <= 0.05 for label, paper in PAPER_VOLUMES.items())
    ours = volumes["ours: DR(QSGD, rice)"] <= 0.9 * volumes["DR(QSGD, BF-P0)"]
    lines.append(f"done when: volumes within 5% of the paper's: {'holds' if within else 'FAILS'}; "
                 f"ours <= 0.9x DR(QSGD, BF-P0): {'holds' if ours else 'FAILS'}")
    return results, "\n".join(lines)


def paper_mobilenet(args, out):
    results = fl.run(rows_to_run(), rounds=args.mobilenet_rounds, seed=args.seed, out=out / "mobilenet",
                     progress=_progress("mobilenet"), **MOBILENET)
    table = results.table(title=f"MobileNet-style CNN ({results[0].dense_bytes // 4:,} "
                                f"floats), digits, 10 clients, Dirichlet(0.5), {args.mobilenet_rounds} rounds")
    lines = [table, "", f"{'Table 5':<22} {'volume':>8} {'accuracy':>9} | {'paper vol':>9} {'paper acc':>9}"]
    for run, row in zip(results, results.rows()):
        paper = PAPER_TABLE5.get(row.label)
        lines.append(f"{row.label:<22} {row.c2s_volume:8.4f} {run.final_metric:9.4f} | " +
                     (f"{paper[0]:9.4f} {paper[1]:9.4f}" if paper else ""))
    gap = results[0].final_metric - min(run.final_metric for run in results[1:])
    lines.append(f"done when: every compressed row within {MARGIN:.2f} of uncompressed FedAvg's accuracy: "
                 f"{'holds' if gap <= MARGIN else 'FAILS'} (largest gap {gap:.4f})")
    return results, "\n".join(lines)


def real_link(args, out):
    """The LSTM rows over gloo processes inside a tc tbf namespace; returns the table."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from limited_link import RATES, link_namespace
    rate = RATES[args.link]
    lines = [f"LSTM rows over 3 gloo processes on a real {args.link} tc tbf link, {args.link_rounds} rounds, "
             f"{LSTM['per_round']} clients per round",
             f"{'configuration':<22} {'measured s/round':>16} {'model s/round':>14} {'bytes/round':>12}"]
    with link_namespace(rate, "fl") as namespace:
        for label, params in [("baseline", PAPER_ROWS["baseline"])] + list(rows_to_run().items()):
            folder = out / "link" / label.replace(" ", "_").replace("%", "pct")
            cmd = ["ip", "netns", "exec", namespace, sys.executable, "-m", "deepreduce", "fl", "--no-baseline",
                   "--processes", "3", "--rounds", str(args.link_rounds), "--eval-every", str(args.link_rounds),
                   "--params", json.dumps(params), "--out", str(folder), "--seed", str(args.seed)]
            for key, value in LSTM.items():
                flag = "--" + key.replace("_", "-")
                cmd += [flag if value else "--no-" + flag[2:]] if isinstance(value, bool) else [flag, str(value)]
            subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=args.timeout)
            run = json.loads((folder / "log.json").read_text())[0]
            rounds = run["rounds"][1:] or run["rounds"]  # round 1 includes the processes' warm-up
            measured = mean(r["wall_seconds"] for r in rounds)
            nbytes = mean(sum(r["s2c_bytes"]) + sum(r["c2s_bytes"]) for r in rounds)
            codec = mean(max(r["client_decode"]) + max(r["client_encode"]) + sum(r["server_decode"]) +
                         sum(r["server_encode"]) + max(r["train_seconds"]) for r in rounds)
            lines.append(f"{label:<22} {measured:16.3f} {codec + 8 * nbytes / rate:14.3f} {nbytes:12,.0f}")
    lines.append("model here: the round's bytes / rate (one shared link) + local training and codec seconds")
    return "\n".join(lines)


def _progress(part):
    def report(rec):
        metric = "" if rec.metric is None else f" accuracy {rec.metric:.4f}"
        print(f"  [{part}] round {rec.round}: {rec.wall_seconds:.1f}s{metric}", file=sys.stderr, flush=True)
    return report


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--parts", nargs="+", default=["lstm", "mobilenet"], choices=["lstm", "mobilenet", "link"])
    p.add_argument("--lstm-rounds", type=int, default=10)
    p.add_argument("--mobilenet-rounds", type=int, default=30)
    p.add_argument("--link", default="100mbit", choices=["100mbit", "1gbit", "10gbit"])
    p.add_argument("--link-rounds", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=int, default=1800, help="seconds per process run on the link")
    p.add_argument("--out", default="runs/federated", help="folder for log.json, plot.png and tables.txt")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    texts = []
    if "lstm" in args.parts:
        texts.append(paper_lstm(args, out)[1])
    if "mobilenet" in args.parts:
        texts.append(paper_mobilenet(args, out)[1])
    if "link" in args.parts:
        if os.geteuid() != 0:
            sys.exit("federated: --parts link needs root (network namespaces and tc)")
        texts.append(real_link(args, out))
    text = "\n\n".join(texts) + f"\n\n({time.perf_counter() - started:.0f} s)"
    print(text)
    (out / "tables.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
