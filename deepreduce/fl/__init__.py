"""Federated mode: FedAvg with two-way compression (DeepReduce's Algorithm 2), the paper's
LSTM layout and a MobileNet-style CNN, and its federated tables (docs/federated.md).

Names load on first use, so ``deepreduce --help`` does not import torch."""
import importlib

_EXPORTS = {"run": "api", "Results": "api", "Settings": "settings", "simulate": "fedavg", "FLRun": "fedavg",
            "PAPER_ROWS": "table", "format_table": "table", "row_from_run": "table"}
__all__ = list(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'deepreduce.fl' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
