"""Where TensorFlow tensors cross into NumPy and back: ``tf.numpy_function``.

Inside a ``tf.function`` a gradient is symbolic, so the C core cannot see its memory;
``tf.numpy_function`` runs a Python function on the tensors' values when the graph
executes (in eager mode, at once). Every crossing here is one such op for a whole list of
tensors, so one step of a model is one op and its tensors are exchanged in list order.

Collectives must run in the same order on every rank, and TensorFlow runs independent
ops of a graph in any order (and in parallel). So each crossing made in a graph waits,
through a control dependency, for the previous crossing made in the same graph, and a
lock keeps two crossings of different graphs (two concurrent functions) apart.
"""
import threading
import weakref

import numpy as np
import tensorflow as tf

# What a tf.function calls of ours runs as the Python it is: it builds its ops itself (one
# numpy_function per crossing), so AutoGraph has nothing to convert there, and its
# conversion of these functions and methods, each time one is traced, was seen to go wrong
# now and then in a long test run ("'DistributedGradientTape' object is not iterable").
not_converted = tf.autograph.experimental.do_not_convert

# The last crossing's outputs in each graph being built, for the next one to wait on.
_LAST_IN_GRAPH = weakref.WeakKeyDictionary()
_EXCHANGE_LOCK = threading.RLock()  # re-entrant: a crossing run eagerly inside another may take it again


@not_converted
def numpy_call(fn, tensors, dtypes, name="deepreduce", shapes=None):
    """Run ``fn(*arrays) -> list of arrays`` on the tensors' values as one op; return TF
    tensors of ``dtypes`` with static ``shapes`` (default: the inputs' shapes). Ordered
    after the previous crossing of the same graph (see the module's docstring)."""
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    if not tensors:
        return []

    def locked(*arrays):
        with _EXCHANGE_LOCK:
            return [np.asarray(out, dtype=dtype.as_numpy_dtype) for out, dtype in zip(fn(*arrays), dtypes)]

    graph = None if tf.executing_eagerly() else tf.compat.v1.get_default_graph()
    previous = _LAST_IN_GRAPH.get(graph, []) if graph is not None else []
    with tf.control_dependencies(previous):
        outputs = tf.numpy_function(locked, tensors, list(dtypes), stateful=True, name=name)
    if not isinstance(outputs, (list, tuple)):  # one output comes back bare, not in a list
        outputs = [outputs]
    if graph is not None:
        _LAST_IN_GRAPH[graph] = list(outputs)
    for out, shape in zip(outputs, shapes if shapes is not None else [t.shape for t in tensors]):
        out.set_shape(shape)
    return list(outputs)


@not_converted
def step_tensorflow(communicator, tensors, names):
    """``communicator.step`` on each TF tensor, in order, as one op: GRACE's TensorFlow
    ``grc.step(tensor, name)`` for eager and symbolic tensors alike. Float dtypes other
    than float32 travel as float32 and come back in their own dtype."""
    if len(tensors) != len(names):
        raise ValueError(f"step_tensorflow: {len(tensors)} tensors but {len(names)} names")
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    for tensor, name in zip(tensors, names):
        if not tensor.dtype.is_floating:
            raise TypeError(f"gradient {name!r}: expected a floating-point tensor, got dtype {tensor.dtype.name}")
    core = [t if t.dtype == tf.float32 else tf.cast(t, tf.float32) for t in tensors]

    def exchange(*arrays):
        return [communicator.step(array, name) for array, name in zip(arrays, names)]

    results = numpy_call(exchange, core, [tf.float32] * len(core), name="deepreduce_grace_step")
    return [r if t.dtype == tf.float32 else tf.cast(r, t.dtype) for r, t in zip(results, tensors)]
