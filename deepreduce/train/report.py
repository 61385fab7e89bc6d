"""What a training job leaves behind: log.json, epochs.csv, steps.csv, plot.png and a table."""
import csv
import json
import math
import platform
from pathlib import Path

EPOCH_FIELDS = ("run", "epoch", "metric", "test_loss", "train_loss", "bytes_sent", "dense_bytes",
                "cum_bytes_sent", "cum_dense_bytes", "encode_s_per_step", "decode_s_per_step",
                "wall_s")
STEP_FIELDS = ("run", "epoch", "step", "bytes_sent", "dense_bytes", "stage")


def _write_csv(path, fields, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, restval="")
        w.writeheader()
        w.writerows(rows)


def describe(params):
    """A short legend label for a params dict: 'topk+residual, allgather, compress_ratio=0.01'."""
    head = "+".join(str(params[k]) for k in ("compressor", "memory") if k in params)
    rest = [str(params["communicator"])] if "communicator" in params else []
    rest += [f"{k}={v}" for k, v in params.items()
             if k not in ("compressor", "memory", "communicator")]
    return ", ".join([head] + rest) if head else ", ".join(rest)


def plot(results, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, (acc, vol) = plt.subplots(1, 2, figsize=(11, 4.2))
    for r in results:
        e = [row["epoch"] for row in r["epochs"]]
        label = f"{r['label']}: {describe(r['params'])}"
        acc.plot(e, [row["metric"] for row in r["epochs"]], marker="o", ms=3, label=label)
        # Epoch 0 sent nothing; a log axis needs positive values, so the volume curve starts
        # at epoch 1.
        vol.plot(e[1:], [row["cum_bytes_sent"] for row in r["epochs"][1:]], marker="o", ms=3,
                 label=label)
    metric = results[0]["metric_name"]
    acc.set(xlabel="epoch", ylabel=f"test {metric}", title=f"Test {metric}")
    vol.set(xlabel="epoch", ylabel="cumulative bytes sent (all workers)", yscale="log",
            title="Gradient bytes sent")
    for ax in (acc, vol):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(title)
    fig.savefig(path, dpi=110, bbox_inches="tight")  # room for long legends, whatever the runs
    plt.close(fig)


def summary_rows(results):
    """One row per run; the relative volume is against the dense run when there is one."""
    dense = next((r for r in results if r["label"] == "dense"), None)
    rows = []
    for r in results:
        f = r["final"]
        ref = dense["final"]["bytes_sent"] if dense else f["dense_bytes"]
        rows.append(dict(run=r["label"], metric=f["metric"], bytes_sent=f["bytes_sent"],
                         relative_volume=f["bytes_sent"] / ref if ref else float("nan"),
                         wall_s=f["wall_s"]))
    return rows


def human_bytes(n):
    """``n`` bytes in SI units, as the tables print them: "512 B", "1.50 MB"."""
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1000


def format_table(results):
    metric = results[0]["metric_name"]
    head = f"{'run':<12} {'final ' + metric:>16} {'bytes sent':>12} {'vs dense':>9} {'wall s':>8}"
    lines = [head, "-" * len(head)]
    for row in summary_rows(results):
        lines.append(f"{row['run']:<12} {row['metric']:>16.4f} {human_bytes(row['bytes_sent']):>12}"
                     f" {row['relative_volume']:>9.2%} {row['wall_s']:>8.1f}")
    return "\n".join(lines)


def _finite_or_null(value):
    """``value`` with every NaN or infinite float, at any depth, as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite_or_null(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_null(v) for v in value]
    return value


def write_outputs(cfg, world_size, results):
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    import torch
    log = dict(config=cfg.to_dict(), world_size=world_size,
               environment=dict(python=platform.python_version(), torch=torch.__version__,
                                host=platform.node()),
               summary=summary_rows(results), runs=results)
    # A diverged run's NaN loss as null: NaN and Infinity are no JSON (other readers refuse them).
    (out / "log.json").write_text(json.dumps(_finite_or_null(log), indent=1, allow_nan=False))
    _write_csv(out / "epochs.csv", EPOCH_FIELDS,
               [dict(run=r["label"], **row) for r in results for row in r["epochs"]])
    _write_csv(out / "steps.csv", STEP_FIELDS,
               [dict(run=r["label"], **row) for r in results for row in r["steps"]])
    plot(results, out / "plot.png", f"{cfg.dataset}, {cfg.model}, {world_size} workers, "
                                    f"batch {cfg.batch_size}/worker, lr {cfg.lr}, seed {cfg.seed}")
    if cfg.prints:
        print(format_table(results))
        print(f"logs and plot in {out}/ (log.json, epochs.csv, steps.csv, plot.png)", flush=True)
