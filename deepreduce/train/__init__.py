"""The main job: local data-parallel training with any GRACE/DeepReduce params dict.

``deepreduce train`` (see ``deepreduce.cli``) launches workers (``launch``), each of which runs
``loop.run_worker``: load a shard of a data set (``data``), build a model (``models``), train it
with ``grc.step`` on every gradient, and log accuracy and bytes sent (``report``).
"""
