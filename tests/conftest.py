"""Fixtures shared by the test modules."""
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
