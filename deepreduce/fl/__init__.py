"""Federated mode: FedAvg with two-way compression (DeepReduce's Algorithm 2), the paper's
LSTM layout and a MobileNet-style CNN, and its federated tables (docs/federated.md)."""
from .api import Results, run
from .fedavg import FLRun, Settings, simulate
from .table import PAPER_ROWS, format_table, row_from_run

__all__ = ["run", "Results", "Settings", "simulate", "FLRun", "PAPER_ROWS", "format_table", "row_from_run"]
