"""The paper's federated table (Tables 2 and 4): per configuration, client and server
encode/decode seconds, S2C and C2S communication seconds, relative volume each way and
accuracy; and the per-round time model beside the measured time.

The time model of one round follows the paper's columns: a client's decode, its encode,
the server's decode and encode of one message, and one message each way over the
client's own link of ``rate`` bits/s (bytes x 8 / rate; clients have links of their own,
so they do not share it):

    round seconds = CLI decode + CLI encode + SER decode + SER encode + S2C + C2S

Local training is left out, as in the paper's comparison; it is reported apart.
"""
from dataclasses import dataclass

from .settings import DENSE

RATES = {"100 Mbit/s": 100e6, "1 Gbit/s": 1e9}

TOPR = {"compressor": "topk", "compress_ratio": 0.1, "memory": "residual", "communicator": "allgather"}
# The rows of Tables 2, 4 and 5 (top-r 10%, error feedback both ways), and ours: a lossless
# index codec (Golomb-Rice) with the QSGD value codec (7 bits, buckets of 512). The paper's
# top-r sends its indices and values as they are: DeepReduce's raw codecs here, because
# our top-k frame sends a bitmap where that is smaller (select.h), as at 10% (TOPR alone:
# 0.135 of dense on the LSTM, below DR(∅, BF-P0)).
PAPER_ROWS = {
    "baseline": dict(DENSE),
    "top-r 10%": dict(TOPR, deepreduce="both", index="raw", value="raw"),
    "DR(∅, BF-P0)": dict(TOPR, deepreduce="index", index="bloom", policy="p0"),
    "DR(Fit-Poly, ∅)": dict(TOPR, deepreduce="value", value="polyfit"),
    "DR(QSGD, BF-P0)": dict(TOPR, deepreduce="both", index="bloom", policy="p0", value="qsgd"),
    "ours: DR(QSGD, rice)": dict(TOPR, deepreduce="both", index="rice", value="qsgd"),
}
# The paper's relative volumes on the LSTM (Tables 2 and 4, S2C = C2S to 3 digits) and the
# round times of Table 4 (100 Mbit/s, the sum of its six time columns).
PAPER_VOLUMES = {"baseline": 1.0, "top-r 10%": 0.2033, "DR(∅, BF-P0)": 0.1425,
                 "DR(Fit-Poly, ∅)": 0.1039, "DR(QSGD, BF-P0)": 0.0621}
PAPER_TABLE4_SECONDS = {"baseline": 2.7589, "top-r 10%": 0.7906, "DR(∅, BF-P0)": 0.5591,
                        "DR(Fit-Poly, ∅)": 0.7596, "DR(QSGD, BF-P0)": 0.3518}


def mean(values):
    values = list(values)
    return sum(values) / len(values) if values else 0.0


@dataclass
class Row:
    """One configuration's means: seconds per message (encode, decode), bytes per message
    (S2C: everything one client received in its round), the final metric."""
    label: str
    cli_decode: float
    cli_encode: float
    ser_decode: float
    ser_encode: float
    s2c_bytes: float
    c2s_bytes: float
    dense_bytes: int
    metric: float = None
    train_seconds: float = None
    measured_round: float = None

    @property
    def s2c_volume(self):
        return self.s2c_bytes / self.dense_bytes

    @property
    def c2s_volume(self):
        return self.c2s_bytes / self.dense_bytes

    def comm_seconds(self, rate):
        """(S2C, C2S) seconds of one client's messages over a link of ``rate`` bits/s."""
        return 8 * self.s2c_bytes / rate, 8 * self.c2s_bytes / rate

    def codec_seconds(self):
        return self.cli_decode + self.cli_encode + self.ser_decode + self.ser_encode

    def round_seconds(self, rate):
        return self.codec_seconds() + sum(self.comm_seconds(rate))


def row_from_run(run, label=None):
    """The Row of an FLRun: means over every round (S2C over the clients that received
    something: under the 'round' reading nobody does in round 1)."""
    rounds = run.rounds
    return Row(label or run.label,
               cli_decode=mean(s for r in rounds for s, b in zip(r.client_decode, r.s2c_bytes) if b),
               cli_encode=mean(s for r in rounds for s in r.client_encode),
               ser_decode=mean(s for r in rounds for s in r.server_decode),
               ser_encode=mean(s for r in rounds for s in r.server_encode),
               s2c_bytes=mean(b for r in rounds for b in r.s2c_bytes if b),
               c2s_bytes=mean(b for r in rounds for b in r.c2s_bytes),
               dense_bytes=run.dense_bytes, metric=run.final_metric,
               train_seconds=mean(s for r in rounds for s in r.train_seconds),
               measured_round=mean(r.wall_seconds for r in rounds))


def format_table(rows, rates=RATES, title=None, paper=None):
    """The paper's table, then the time model per rate (and the paper's, if given)."""
    lines = [title] if title else []
    head = (f"{'configuration':<22} {'CLI dec':>8} {'CLI enc':>8} {'SER dec':>8} {'SER enc':>8} "
            + " ".join(f"{'S2C s':>7} {'C2S s':>7}" for _ in rates)
            + f" {'S2C vol':>8} {'C2S vol':>8} {'accuracy':>8}")
    under = (" " * 58 + " ".join(f"{name:^15}" for name in rates))
    lines += [under, head, "-" * len(head)]
    for row in rows:
        comm = " ".join("%7.4f %7.4f" % row.comm_seconds(rate) for rate in rates.values())
        metric = "" if row.metric is None else f"{row.metric:8.4f}"
        lines.append(f"{row.label:<22} {row.cli_decode:8.4f} {row.cli_encode:8.4f} {row.ser_decode:8.4f} "
                     f"{row.ser_encode:8.4f} {comm} {row.s2c_volume:8.4f} {row.c2s_volume:8.4f} {metric:>8}")
    lines.append("")
    lines.append(format_speedups(rows, rates, paper))
    return "\n".join(lines)


def format_speedups(rows, rates=RATES, paper=None):
    """Round seconds of the time model per rate, and each row's speedup over top-r and
    the baseline (the paper's "2.2x faster than top-r, 7.8x faster than the baseline");
    beside them the measured round (wall seconds on this machine: every sampled client in
    turn when simulated, the server's round over the processes otherwise) and one client's
    local training seconds."""
    by = {row.label: row for row in rows}
    lines = [f"{'time model, s/round':<22} " + " ".join(f"{name:>12} {'vs top-r':>8} {'vs base':>8}" for name in rates)
             + f" | {'measured':>8} {'training':>8}"
             + (f" | {'paper 100M':>10} {'vs top-r':>8} {'vs base':>8}" if paper else "")]
    for row in rows:
        cells = []
        for rate in rates.values():
            t = row.round_seconds(rate)
            top = by.get("top-r 10%")
            base = by.get("baseline")
            cells.append(f"{t:12.4f} {_ratio(top and top.round_seconds(rate), t)} {_ratio(base and base.round_seconds(rate), t)}")
        line = f"{row.label:<22} " + " ".join(cells) + f" | {row.measured_round:8.3f} {row.train_seconds:8.3f}"
        if paper:
            t = paper.get(row.label)
            line += (f" | {t:10.4f} {_ratio(paper['top-r 10%'], t)} {_ratio(paper['baseline'], t)}" if t
                     else f" | {'':>10} {'':>8} {'':>8}")
        lines.append(line)
    return "\n".join(lines)


def _ratio(reference, t):
    return f"{reference / t:7.2f}x" if reference and t else f"{'':>8}"
