"""Fixtures shared by the test modules, and how many workers run them."""
import os

import pytest

from deepreduce import world
from deepreduce.transports import LocalTransport


@pytest.fixture
def one_process_world():
    """The Horovod call shapes (torch and TensorFlow alike) bound to a world of one
    process, and unbound again after the test."""
    world.shutdown()
    world.init(LocalTransport())
    yield
    world.shutdown()


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject.toml's addopts): one worker per core this process may use, at
    most 4. Many suites start processes of their own (training ranks, MPI jobs, C builds
    and their tests), so more workers than cores would only queue for them, and each
    worker holds its own torch. On 2 cores, 2 workers took the suite from 20 to 12 minutes."""
    return max(1, min(4, len(os.sched_getaffinity(0))))
