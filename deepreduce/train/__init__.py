"""The main job: local data-parallel training with any GRACE/DeepReduce params dict.

``deepreduce train`` (see ``deepreduce.cli``) launches workers (``launch``), each of which runs
``loop.run_worker``: load a shard of a data set (``data``), build a model (``models``), train it
with ``grc.step`` on every gradient, and log accuracy and bytes sent (``report``).

From Python, ``deepreduce.train.run(...)`` does the same and returns the results as objects
(``api``); ``deepreduce.train.load(folder)`` reads a finished run back.
"""
from .api import Results, RunResult, load, run

__all__ = ["run", "load", "Results", "RunResult"]
