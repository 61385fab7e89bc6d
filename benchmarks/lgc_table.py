"""LGC beside top-k and DeepReduce (rice + qsgd), at ratios 1e-3 and 1e-2, on the default task of ``deepreduce train`` (digits, the
small CNN, 2 workers, 20 epochs of 23 steps, seed 0), every run through the real command
line. Prints, per run: final accuracy; bytes sent relative to dense over LGC's three stage
ranges (steps [0, D), [D, D+T), [D+T, end)) and overall; encode and decode milliseconds per
step (the communicator's accounting, mean over ranks); wall seconds.

Then the whole-step stage-3 bytes of ResNet-20 on a generated CIFAR-10 file; and, on 2 gloo
ranks with random gradients, the bytes per rank per stage-3 step of single
tensors the autoencoder codes, against top-k at the same ratio (frame headers included),
with LGC's own split of the time (``compressor.timings``: encode = selection, coding and
the latent; exchange = its collectives; decode = the decoders and the aggregate).

    python benchmarks/lgc_table.py [--dense-steps 44] [--train-steps 88] [--epochs 20] [--tensors-only]

Runs marked "fused" pass ``--fusion`` so every gradient travels as one vector (one
``grc.step`` per step); "stage-3 B/step/worker" leaves out the first stage-3 step, which
also carries the autoencoder's weights, and "vs top-k" divides it by top-k's at the same
ratio and fusion.
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import distributed  # noqa: E402  (the tests' spawner: gloo over loopback)

FUSED = 1 << 24  # --fusion: every gradient of the small CNN in one bucket


def configs(dense_steps, train_steps):
    """(label, params, fusion bytes or 0) of every training run."""
    runs = [("dense", {"compressor": "none", "memory": "none", "communicator": "allreduce"}, 0)]
    for ratio in (1e-3, 1e-2):
        topk = {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": ratio}
        lgc = {"compressor": "lgc", "compress_ratio": ratio, "lgc_dense_steps": dense_steps,
               "lgc_train_steps": train_steps}
        runs += [(f"top-k {ratio:g}", topk, 0),
                 (f"DR rice+qsgd {ratio:g}", dict(topk, deepreduce="both", index="rice", value="qsgd"), 0),
                 (f"LGC ps {ratio:g}", dict(lgc, lgc_variant="ps"), 0),
                 (f"LGC rar {ratio:g}", dict(lgc, lgc_variant="rar"), 0),
                 # The model's gradient as one vector, as the paper codes it: no tensor is
                 # small, and there is no first or last tensor to keep dense.
                 (f"top-k {ratio:g}, fused", topk, FUSED),
                 (f"LGC ps {ratio:g}, fused", dict(lgc, lgc_variant="ps", lgc_dense_ends=False), FUSED),
                 (f"LGC rar {ratio:g}, fused", dict(lgc, lgc_variant="rar", lgc_dense_ends=False), FUSED)]
    return runs


def train(params, epochs, out, *extra):
    cmd = [sys.executable, "-m", "deepreduce", "train", "--params", json.dumps(params), "--no-baseline",
           "--no-progress", "--epochs", str(epochs), "--out", str(out), *extra]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads((out / "log.json").read_text())["runs"][0]


def stage3_per_worker(run, bounds, workers=2):
    """Mean bytes per worker per stage-3 step, after the first (which also carries LGC's
    autoencoder weights, broadcast once); None where the run ends before such a step."""
    sent = [s["bytes_sent"] for s in run["steps"][bounds[1] + 1:]]
    return np.mean(sent) / workers if sent else None


def row(label, run, bounds, topk_run):
    steps = run["steps"]
    dense_per_step = steps[0]["dense_bytes"]
    ranges = [(0, bounds[0]), (bounds[0], bounds[1]), (bounds[1], len(steps)), (0, len(steps))]
    rel = [sum(s["bytes_sent"] for s in steps[a:b]) / (dense_per_step * max(b - a, 1)) for a, b in ranges]
    epochs = run["epochs"][1:]
    enc = 1e3 * np.mean([e["encode_s_per_step"] for e in epochs])
    dec = 1e3 * np.mean([e["decode_s_per_step"] for e in epochs])
    s3 = stage3_per_worker(run, bounds)
    topk_s3 = stage3_per_worker(topk_run, bounds) if topk_run is not None else None
    vs = f"{s3 / topk_s3:.2f}" if s3 is not None and topk_s3 else "-"
    return (f"| {label} | {run['final']['metric']:.4f} | " + " | ".join(f"{100 * r:.3f}%" for r in rel)
            + f" | {'-' if s3 is None else f'{s3:.0f}'} | {vs} | {enc:.2f} | {dec:.3f} | {run['final']['wall_s']:.1f} |")


def step_seconds(run, first_epoch, last_epoch):
    """Mean wall seconds per step over whole epochs first..last (1-based); None where
    there is no such epoch (a stage shorter than an epoch, or cut off by the run's end)."""
    e = run["epochs"]
    last_epoch = min(last_epoch, len(e) - 1)
    steps = sum(1 for s in run["steps"] if first_epoch <= s["epoch"] <= last_epoch)
    if first_epoch < 1 or first_epoch > last_epoch or steps == 0:
        return None
    return (e[last_epoch]["wall_s"] - e[first_epoch - 1]["wall_s"]) / steps


def _coded_tensor_bytes(rank, world_size, variant, shape, ratio):
    import deepreduce
    from deepreduce.compressors.topk import TopKCompressor
    grc = deepreduce.grace_from_params({"compressor": "lgc", "lgc_variant": variant, "compress_ratio": ratio,
                                        "lgc_dense_steps": 1, "lgc_train_steps": 8, "lgc_dense_ends": False})
    rng = np.random.default_rng(rank)
    sent, timings = [], grc.compressor.timings.seconds
    for step in range(14):
        g = rng.standard_normal(shape).astype(np.float32)
        before = grc.stats.per_name.get("w")
        before = before.bytes_sent if before else 0
        if step == 10:
            start = dict(timings)
        grc.step(g, "w")
        sent.append(grc.stats.per_name["w"].bytes_sent - before)
    topk = TopKCompressor(ratio)
    tensors, ctx = topk.compress(g, "w")
    split = {kind: 1e3 * (timings[kind] - start[kind]) / 4 for kind in timings}
    return float(np.mean(sent[10:])), topk.wire_bytes(tensors, ctx), split


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dense-steps", type=int, default=44)
    ap.add_argument("--train-steps", type=int, default=88)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--tensors-only", action="store_true", help="only the per-tensor table (a minute)")
    args = ap.parse_args()
    if not args.tensors_only:
        training_table(args)
        resnet20_table()
    tensor_table()


def training_table(args):
    from tqdm import tqdm
    bounds = (args.dense_steps, args.dense_steps + args.train_steps)
    runs = {}
    todo = configs(args.dense_steps, args.train_steps)
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, params, fusion) in enumerate(tqdm(todo, desc="training runs", unit="run")):
            runs[label] = train(params, args.epochs, pathlib.Path(tmp) / str(i), "--fusion", str(fusion))
    print("| run | accuracy | bytes vs dense: stage 1 steps | stage 2 steps | stage 3 steps | overall "
          "| stage-3 B/step/worker | vs top-k | encode ms/step | decode ms/step | wall s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, params, fusion in todo:
        # LGC against top-k at the same ratio, fused the same way.
        topk_label = f"top-k {params.get('compress_ratio', 0):g}" + (", fused" if fusion else "")
        print(row(label, runs[label], bounds, runs[topk_label] if params["compressor"] == "lgc" else None))
    for variant in ("ps", "rar"):
        run = runs[f"LGC {variant} 0.001"]
        changes = {c["stage"].split(" (")[0]: c["epoch"] for c in run["stage_changes"]}
        s2 = s3 = None
        if "stage 2" in changes and "stage 3" in changes:
            s2 = step_seconds(run, changes["stage 2"] + 1, changes["stage 3"] - 1)
            s3 = step_seconds(run, changes["stage 3"] + 1, args.epochs)
        if s2 is None or s3 is None:
            print(f"\nLGC {variant}: stages 2 and 3 do not each span a whole epoch in this run (stage changes "
                  f"at epochs {changes}, {args.epochs} epochs), so their steps are not timed: give more "
                  "--train-steps, or more --epochs past --dense-steps + --train-steps")
            continue
        print(f"\nLGC {variant}: a stage-2 step (autoencoder training on rank 0) takes {1e3 * s2:.1f} ms, "
              f"a stage-3 step {1e3 * s3:.1f} ms: training costs {100 * (s2 - s3) / s3:.0f}% of a step "
              f"while it runs, {100 * (s2 - s3) * args.train_steps / run['final']['wall_s']:.0f}% of the run")


def resnet20_table():
    """Whole-step stage-3 bytes of ResNet-20 (65 tensors, 270 k weights) on a generated
    CIFAR-10 file (random images: bytes only, no accuracy), 2 workers, 15 steps, per
    tensor (the paper's routes: small tensors and the first and last one dense) and with
    every gradient fused into one bucket."""
    from test_data_loaders import write_cifar
    print("\nResNet-20, generated CIFAR-10, 2 workers: bytes per worker per stage-3 step (whole step)")
    print("| ratio | top-k | LGC ps | LGC rar | top-k fused | LGC ps fused | LGC rar fused "
          "| ps / top-k | ps fused / top-k fused | rar fused / top-k fused |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        data = write_cifar(pathlib.Path(tmp) / "cifar", per_batch=16, test=8)
        extra = ("--dataset", "cifar10", "--data-dir", str(data), "--batch-size", "8")
        topk = {"compressor": "topk", "memory": "residual", "communicator": "allgather"}
        lgc = {"compressor": "lgc", "lgc_dense_steps": 2, "lgc_train_steps": 4}
        plain = [topk, dict(lgc, lgc_variant="ps"), dict(lgc, lgc_variant="rar")]
        fused = [topk, dict(lgc, lgc_variant="ps", lgc_dense_ends=False),
                 dict(lgc, lgc_variant="rar", lgc_dense_ends=False)]
        for ratio in (1e-3, 1e-2):
            sent = []
            for i, (params, fusion) in enumerate([(p, 0) for p in plain] + [(p, FUSED) for p in fused]):
                run = train(dict(params, compress_ratio=ratio), 3, pathlib.Path(tmp) / f"{ratio}-{i}", *extra,
                            "--fusion", str(fusion))
                sent.append(stage3_per_worker(run, (2, 6)))
            print(f"| {ratio:g} | " + " | ".join(f"{b:.0f}" for b in sent)
                  + f" | {sent[1] / sent[0]:.2f} | {sent[4] / sent[3]:.2f} | {sent[5] / sent[3]:.2f} |")


def tensor_table():
    print("\nOne coded tensor, bytes per rank per stage-3 step (2 ranks) vs top-k at the same ratio:")
    print("| tensor | ratio | k | LGC ps | LGC rar | top-k | ps / top-k | rar / top-k "
          "| ps ms: encode / exchange / decode | rar ms: encode / exchange / decode |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for shape, ratio in [((512, 64), 1e-3), ((64, 64, 3, 3), 1e-3), ((512, 64), 1e-2), ((256, 256, 3, 3), 1e-3)]:
        ps, topk, ps_ms = distributed.run(_coded_tensor_bytes, 2, "ps", shape, ratio, timeout=600)[0]
        rar, _, rar_ms = distributed.run(_coded_tensor_bytes, 2, "rar", shape, ratio, timeout=600)[0]
        k = max(1, int(np.prod(shape) * ratio))
        print(f"| {'x'.join(map(str, shape))} | {ratio:g} | {k} | {ps:.0f} | {rar:.0f} | {topk} | "
              f"{ps / topk:.2f} | {rar / topk:.2f} | " + " | ".join(
                  " / ".join(f"{ms[kind]:.2f}" for kind in ("encode", "exchange", "decode"))
                  for ms in (ps_ms, rar_ms)) + " |")


if __name__ == "__main__":
    main()
