"""Federated runs from Python:

    import deepreduce.fl
    results = deepreduce.fl.run(deepreduce.fl.PAPER_ROWS, rounds=20, clients=10)
    print(results.table())      # the paper's columns and the time model
    results.plot("fl.png")      # accuracy per round, volume each way

Each params dict of ``runs`` drives both directions unless it is a pair
``{"c2s": {...}, "s2c": {...}}``. Settings (``model``, ``clients``, ``per_round``,
``rounds``, ``local_epochs``, ``batch_size``, ``lr``, ``optimizer``, ``alpha``,
``c2s_ef``, ``s2c_ef``, ``s2c_update``, ``weighting``, ``server_lr``, ``compress_1d``,
``seed``, ``eval_every``, ``sentences``) are ``deepreduce.fl.Settings``'s and apply to
every run. ``processes=0`` multiplexes every client in this process; ``processes=P`` >= 2
runs a server and P-1 client hosts over gloo.
"""
import dataclasses
import json

import torch

from ..checks import flag, output_folder, runs_by_label
from .fedavg import simulate
from .settings import DENSE, Settings, is_count
from .table import RATES, format_table, row_from_run


class Results(list):
    """The FLRuns of one ``run`` call, in order."""

    def rows(self):
        return [row_from_run(r) for r in self]

    def table(self, rates=RATES, title=None, paper=None):
        return format_table(self.rows(), rates, title, paper)

    def to_json(self):
        return [{"label": r.label, "mode": r.mode, "metric_name": r.metric_name, "dense_bytes": r.dense_bytes,
                 "settings": dataclasses.asdict(r.settings),
                 "rounds": [dataclasses.asdict(x) for x in r.rounds]} for r in self]

    def plot(self, path=None, title=None, rate=100e6):
        """Three panels: accuracy per round (the paper's Figs. 6 and 18), accuracy against
        the time model's clock at ``rate`` bits/s, local training included (Fig. 20), and
        the relative volume each way (Tables 2 and 5). Saved to ``path`` when given."""
        import matplotlib
        if path is not None:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (by_round, by_time, vol) = plt.subplots(1, 3, figsize=(15, 4.2))
        rows = self.rows()
        for r, row in zip(self, rows):
            per_round = row.round_seconds(rate) + row.train_seconds
            points = [(x.round, x.metric) for x in r.rounds if x.metric is not None]
            by_round.plot(*zip(*points), marker=".", label=r.label)
            by_time.plot([n * per_round for n, _ in points], [m for _, m in points], marker=".", label=r.label)
        metric = f"test {self[0].metric_name}"
        by_round.set(xlabel="round", ylabel=metric, title=title or "FedAvg, two-way compression")
        by_time.set(xlabel=f"modelled time at {rate / 1e6:g} Mbit/s, s (codecs + link + local training)",
                    ylabel=metric, title="accuracy against time")
        for ax in (by_round, by_time):
            ax.grid(alpha=0.3)
            ax.legend(fontsize="small")
        xs = range(len(rows))
        vol.bar([x - 0.2 for x in xs], [row.s2c_volume for row in rows], 0.4, label="S2C")
        vol.bar([x + 0.2 for x in xs], [row.c2s_volume for row in rows], 0.4, label="C2S")
        vol.set_xticks(list(xs), [row.label for row in rows], rotation=30, ha="right", fontsize="small")
        vol.set(ylabel="volume relative to dense", yscale="log", title="data volume per message")
        vol.grid(alpha=0.3, axis="y")
        vol.legend(fontsize="small")
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=100)
        return fig


def _directions(label, run):
    """(c2s, s2c) params dicts of one run: a pair {'c2s': ..., 's2c': ...}, or one dict for both."""
    if set(run) != {"c2s", "s2c"}:
        return dict(run), dict(run)
    for direction in ("c2s", "s2c"):
        if not isinstance(run[direction], dict):
            raise TypeError(f"run {label!r}: {direction} must be a params dict, got {run[direction]!r}")
    return dict(run["c2s"]), dict(run["s2c"])


def run(runs, *, processes=0, baseline=True, threads=1, out=None, progress=None, **settings):
    """Run each params dict of ``runs`` (label -> params, or one params dict labelled
    'compressed'), plus uncompressed FedAvg labelled 'baseline' unless ``baseline`` is False
    or a run has that label. ``threads`` sets torch's intra-op threads of this process (one
    per core is far faster than oversubscribing when clients run one after the other).
    ``out``: a folder for log.json and plot.png. Returns ``Results``."""
    # One run's own params: a params dict, or a {'c2s': ..., 's2c': ...} pair of them.
    runs = runs_by_label(runs, one_run={"c2s", "s2c"})
    pairs = [(str(label), _directions(label, params)) for label, params in runs.items()]
    if flag(baseline, "baseline") and "baseline" not in runs:
        pairs.insert(0, ("baseline", (dict(DENSE), dict(DENSE))))
    unknown = set(settings) - {f.name for f in dataclasses.fields(Settings)} | ({"c2s", "s2c"} & set(settings))
    if unknown:
        raise TypeError(f"unknown settings: {', '.join(sorted(unknown))}; see deepreduce.fl.Settings")
    configs = [(label, Settings(c2s=c2s, s2c=s2c, **settings)) for label, (c2s, s2c) in pairs]  # all checked here
    if threads is not None and not (is_count(threads) and threads >= 0):
        raise ValueError(f"threads={threads!r} must be an integer >= 1, or 0 to leave torch's own setting")
    if not (is_count(processes) and processes != 1 and processes >= 0):
        raise ValueError(f"processes={processes!r} must be an integer: 0 to run every client in this process, "
                         "or 2 or more processes")
    if out is not None:  # made now, so that a bad folder fails before any round; written at the end
        out = output_folder(out, "out")
    callers_threads = torch.get_num_threads()
    if threads:
        torch.set_num_threads(int(threads))
    results = Results()
    try:
        for label, config in configs:
            if processes:
                from .procs import run_processes
                results.append(run_processes(config, processes, label))
            else:
                results.append(simulate(config, label, progress))
    finally:
        torch.set_num_threads(callers_threads)  # the caller's own setting again (a notebook trains on)
    if out is not None:
        (out / "log.json").write_text(json.dumps(results.to_json(), indent=1))
        results.plot(out / "plot.png")
    return results
