"""Training runs from Python (a notebook, a script), as objects:

    import deepreduce.train
    results = deepreduce.train.run({"top-k 1%": {"compressor": "topk", "memory": "residual",
                                                 "communicator": "allgather", "compress_ratio": 0.01}},
                                   epochs=6)
    results            # a table in a notebook (dense baseline included)
    results.plot()     # accuracy against bytes sent, the Pareto front marked

The same job as ``deepreduce train`` (spawned workers on gloo over loopback, one after the
other per params dict, the same seed), but the progress bars are drawn by the calling
process (so in the notebook cell, not the kernel's terminal) and nothing is printed:
the results come back as a ``Results`` list of ``RunResult``. The run's files (log.json,
epochs.csv, steps.csv, plot.png) are written to ``out`` (a temporary folder by default).
"""
import html
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..checks import flag, integer, output_folder, runs_by_label
from .config import DENSE_PARAMS, make_config


@dataclass
class RunResult:
    """One params dict's training run: the final numbers and the per-epoch and per-step log."""
    label: str
    params: dict
    metric_name: str
    metric: float
    test_loss: float
    bytes_sent: int
    dense_bytes: int
    wall_s: float
    relative_volume: float  # bytes sent against the dense run's (or, without one, dense float32)
    epochs: list = field(repr=False, default_factory=list)
    steps: list = field(repr=False, default_factory=list)


class Results(list):
    """The runs of one ``run`` call, in order, with a table and a plot of them."""

    def __init__(self, runs, out):
        super().__init__(runs)
        self.out = Path(out)

    def __getitem__(self, key):
        if isinstance(key, str):
            for r in self:
                if r.label == key:
                    return r
            raise KeyError(f"no run labelled {key!r}; runs: {', '.join(r.label for r in self)}")
        if isinstance(key, slice):  # still Results: the table, the plot and .out
            return Results(super().__getitem__(key), self.out)
        return super().__getitem__(key)

    def __contains__(self, item):
        """A label (``"topk" in results``, as ``results["topk"]`` finds it) or a run."""
        if isinstance(item, str):
            return any(r.label == item for r in self)
        return super().__contains__(item)

    def pareto(self):
        """The runs no other run beats on both counts (higher metric, fewer bytes sent)."""
        return [r for r in self if not any(
            o.metric >= r.metric and o.bytes_sent <= r.bytes_sent and
            (o.metric > r.metric or o.bytes_sent < r.bytes_sent) for o in self)]

    def rows(self):
        front = {r.label for r in self.pareto()}
        return [dict(run=r.label, metric=r.metric, relative_volume=r.relative_volume,
                     bytes_sent=r.bytes_sent, wall_s=r.wall_s, pareto=r.label in front) for r in self]

    def __str__(self):
        metric = self[0].metric_name if self else "metric"
        width = max([len(r.label) for r in self] + [3])
        lines = [f"{'run':<{width}}  {metric:>12}  {'vs dense':>9}  {'bytes sent':>12}  {'wall s':>7}  pareto"]
        for row in self.rows():
            lines.append(f"{row['run']:<{width}}  {row['metric']:>12.4f}  {row['relative_volume']:>9.3%}  "
                         f"{row['bytes_sent']:>12,}  {row['wall_s']:>7.1f}  {'*' if row['pareto'] else ''}")
        return "\n".join(lines)

    def _repr_html_(self):
        metric = self[0].metric_name if self else "metric"
        head = "".join(f"<th>{h}</th>" for h in ("run", html.escape(metric), "vs dense", "bytes sent",
                                                  "wall s", "Pareto"))
        body = "".join(
            f"<tr><td>{html.escape(row['run'])}</td><td>{row['metric']:.4f}</td>"
            f"<td>{row['relative_volume']:.3%}</td><td>{row['bytes_sent']:,}</td>"
            f"<td>{row['wall_s']:.1f}</td><td>{'&#9733;' if row['pareto'] else ''}</td></tr>"
            for row in self.rows())
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def plot(self, ax=None, title=None):
        """Metric against relative volume (log scale), one marker per run, labelled in the
        legend (no text on the plot to overlap), the Pareto front as a line."""
        import matplotlib.pyplot as plt
        if ax is None:
            _, ax = plt.subplots(figsize=(7, 4.2))
        colors = plt.get_cmap("tab20").colors
        markers = "osD^vPX<>"
        for i, r in enumerate(self):  # 20 colours x 9 markers: no two runs look alike
            ax.scatter(100 * r.relative_volume, r.metric, s=45, label=r.label, zorder=3,
                       color=colors[i % len(colors)], marker=markers[(i // 2) % len(markers)])
        front = sorted(self.pareto(), key=lambda r: r.relative_volume)
        ax.plot([100 * r.relative_volume for r in front], [r.metric for r in front], color="black",
                lw=1, ls="--", zorder=2, label="Pareto front")
        ax.set_xscale("log")
        ax.set(xlabel="bytes sent, % of the dense run (log)", ylabel=f"final test {self[0].metric_name}",
               title=title or "Accuracy against volume")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
        return ax


def run(runs, *, dataset="digits", workers=2, baseline=True, progress=True, out=None, **settings):
    """Train every params dict of ``runs`` (a dict label -> params, or one params dict,
    labelled 'compressed') on ``workers`` spawned processes, plus a dense baseline run
    labelled 'dense' unless ``baseline`` is False or a run already has that label. Training
    settings (``epochs``, ``model``, ``batch_size``, ``lr``, ``optimizer``,
    ``weight_decay``, ``lr_decay``, ``momentum``, ``seed``, ``data_dir``, ``hidden``, ``fusion``)
    default per data set, as ``deepreduce train --help`` lists. Returns ``Results``."""
    runs = runs_by_label(runs)
    pairs = [(str(label), dict(params)) for label, params in runs.items()]
    progress = flag(progress, "progress")
    if flag(baseline, "baseline") and "dense" not in runs:
        pairs.append(("dense", dict(DENSE_PARAMS)))
    workers = integer(workers, "workers", 1, 1024)
    out = out or tempfile.mkdtemp(prefix="deepreduce-run-")
    cfg = make_config(dataset, pairs, out=out, progress=progress, prints=False, **settings)
    output_folder(cfg.out, "out")  # made now: the results are written after all the training

    from .data import locate_dataset
    from .launch import context, spawn
    from .loop import check_communicator, run_worker
    locate_dataset(cfg.dataset, cfg.data_dir)  # a missing folder: before any worker starts
    for _, params in cfg.runs:  # a bad params dict fails here, before any worker starts
        check_communicator(params, workers, "spawn")
    channel = context().Queue() if progress else None
    if channel is not None:
        from .progress import BarBoard
        board = BarBoard(channel)
        try:
            spawn(run_worker, workers, (cfg, channel), while_waiting=board.drain)
        finally:
            board.close()
    else:
        spawn(run_worker, workers, (cfg,))
    return load(out)


def load(out):
    """The Results of a finished run from its folder (``log.json``), e.g. one that
    ``deepreduce train --out DIR`` wrote."""
    log = json.loads((Path(out) / "log.json").read_text())
    rows = {row["run"]: row for row in log["summary"]}
    return Results([RunResult(label=r["label"], params=r["params"], metric_name=r["metric_name"],
                              metric=r["final"]["metric"], test_loss=r["final"]["test_loss"],
                              bytes_sent=r["final"]["bytes_sent"], dense_bytes=r["final"]["dense_bytes"],
                              wall_s=r["final"]["wall_s"], relative_volume=rows[r["label"]]["relative_volume"],
                              epochs=r["epochs"], steps=r["steps"]) for r in log["runs"]], out)
