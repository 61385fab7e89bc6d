"""GRACE's TensorFlow flavour on the C core: TF tensors cross through tf.numpy_function
(eagerly and inside tf.function), GRACE's TensorFlow names and keys, the Horovod call
shapes over our transports, and a TF rank and a torch rank decoding each other's frames
for the four TF-only methods. See docs/tensorflow.md."""
import copy

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import deepreduce.tensorflow.horovod as hvd  # noqa: E402
import deepreduce.tensorflow.horovod.keras as hvd_keras  # noqa: E402
from deepreduce import edge, grace_from_params, world  # noqa: E402
from grace_dl.tensorflow.helper import grace_from_params as tf_grace_from_params  # noqa: E402
from tests.distributed import run  # noqa: E402

TOPK = {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.1}
QSGD = {"compressor": "qsgd", "memory": "none", "communicator": "allgather"}
TF_ONLY = ("adaq", "inceptionn", "sketch", "u8bit")  # GRACE's TensorFlow-only methods, by its names


def gradients(seed, shapes=((20, 50), (50,))):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) * 1e-2).astype(np.float32) for shape in shapes]


@pytest.mark.parametrize("params", [TOPK, QSGD, dict(QSGD, compressor="adaq", memory="residual")])
def test_tf_tensors_give_the_numpy_result_eagerly_and_in_a_tf_function(params):
    grads = gradients(0)
    by_numpy = grace_from_params(params)
    expected = [[by_numpy.step(g, f"g{i}") for i, g in enumerate(grads)] for _ in range(3)]
    eager = grace_from_params(params)
    got = [[eager.step(tf.constant(g), f"g{i}") for i, g in enumerate(grads)] for _ in range(3)]
    for exp_step, got_step in zip(expected, got):
        for e, g in zip(exp_step, got_step):
            assert isinstance(g, tf.Tensor) and g.shape == e.shape
            np.testing.assert_array_equal(g.numpy(), e)
    traced = grace_from_params(params)
    step = tf.function(lambda a, b: [traced.step(a, "g0"), traced.step(b, "g1")])
    for exp_step in expected:
        out = step(tf.constant(grads[0]), tf.constant(grads[1]))
        for e, g in zip(exp_step, out):
            np.testing.assert_array_equal(g.numpy(), e)


def test_crossings_in_a_graph_run_in_the_order_they_were_made():
    grc = grace_from_params(TOPK)
    graph = tf.function(lambda a, b: [grc.step(a, "first"), grc.step(b, "second")]).get_concrete_function(
        tf.TensorSpec([10]), tf.TensorSpec([10])).graph
    crossings = [op for op in graph.get_operations() if op.type in ("PyFunc", "EagerPyFunc")]
    assert len(crossings) == 2
    second_waits_for = {op.name for op in crossings[1].control_inputs}
    assert crossings[0].name in second_waits_for


def test_dtypes_other_than_float32_come_back_in_their_own_and_integers_are_refused():
    grc = grace_from_params(QSGD)
    for dtype in (tf.float16, tf.bfloat16, tf.float64):
        out = grc.step(tf.cast(tf.constant(gradients(1)[1]), dtype), "b")
        assert out.dtype == dtype and out.shape == (50,)
    with pytest.raises(TypeError, match="floating-point"):
        grc.step(tf.constant([1, 2, 3]), "ints")


def test_graces_tensorflow_keys_names_and_defaults():
    assert tf_grace_from_params({"compressor": "sketch"}).compressor.bins == 64
    assert tf_grace_from_params({"compressor": "sketch", "quantiles": 16}).compressor.bins == 16
    assert tf_grace_from_params({"compressor": "inceptionn"}).compressor.bound_bits == 10
    assert tf_grace_from_params({"compressor": "inceptionn", "error_bound": 2e-6}).compressor.bound_bits == 6
    with pytest.raises(ValueError, match="error_bound"):
        tf_grace_from_params({"compressor": "inceptionn", "error_bound": -1.0})
    for bad in (0.5, 1e-30):  # no band dropped / finer than 24 bits: named as the user's key
        with pytest.raises(ValueError, match="error_bound"):
            tf_grace_from_params({"compressor": "inceptionn", "error_bound": bad})
    assert tf_grace_from_params({"compressor": "inceptionn",
                                 "error_bound": np.float32(2e-6)}).compressor.bound_bits == 6
    assert type(tf_grace_from_params({"compressor": "u8bit"}).compressor).__name__ == "EightBitCompressor"
    from grace_dl.tensorflow.communicator.allgather import Allgather
    from grace_dl.tensorflow.compressor.inceptionn import INCEPTIONNCompressor
    from grace_dl.tensorflow.compressor.topk import TopKCompressor
    from grace_dl.tensorflow.compressor.u8bit import U8bitCompressor
    from grace_dl.tensorflow.memory.residual import ResidualMemory
    assert INCEPTIONNCompressor(2e-10).bound_bits == 10
    grc = Allgather(TopKCompressor(0.3), ResidualMemory(), 1)
    assert grc.world_size == 1 and grc.step(tf.ones([4, 4]), "w").shape == (4, 4)
    assert U8bitCompressor().compress(np.ones(8, np.float32), "x")[0][0].size > 0
    # The constructors as GRACE's TensorFlow helper calls them (a TypeError before).
    from grace_dl.tensorflow.compressor.powersgd import PowerSGDCompressor
    from grace_dl.tensorflow.compressor.sketch import SketchCompressor
    assert SketchCompressor(quantiles=64).bins == 64
    assert PowerSGDCompressor(momentum_factor=0.9, world_size=1).world_size == 1
    positional = PowerSGDCompressor(0.9, 1)  # GRACE's helper: (momentum_factor, world_size); 0.9 was the rank
    assert (positional.rank, positional.world_size) == (1, 1)
    assert isinstance(positional, type(grace_from_params({"compressor": "powersgd"}).compressor))
    with pytest.raises(ValueError, match="both given"):
        SketchCompressor(16, quantiles=64)
    with pytest.raises(ValueError, match="momentum_factor must be in"):
        PowerSGDCompressor(momentum_factor=1.5)


def test_distributed_gradient_tape_averages_through_grace(one_process_world):
    model = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(4), tf.keras.layers.Dense(2)])
    x = tf.constant(np.random.default_rng(0).standard_normal((8, 6)), tf.float32)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(x) ** 2)
    plain = tape.gradient(loss, model.trainable_variables)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(x) ** 2)
    expected_grc = grace_from_params(TOPK)
    names = hvd.variable_names(model.trainable_variables)
    assert len(set(names)) == len(names)
    expected = [expected_grc.step(g.numpy(), n) for g, n in zip(plain, names)]
    got = hvd.DistributedGradientTape(tape, grace=grace_from_params(TOPK)).gradient(loss, model.trainable_variables)
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(g.numpy(), e)
    with pytest.raises(ValueError, match="Compression"):
        hvd.DistributedGradientTape(tape, compression=object())
    with pytest.raises(ValueError, match="compression=hvd.Compression.fp16: only hvd.Compression.none"):
        hvd.DistributedGradientTape(tape, compression=hvd.Compression.fp16)
    hvd.DistributedGradientTape(tape, compression=hvd.Compression.none)
    with pytest.raises(ValueError, match="name="):  # a fresh name per call would lose the residuals
        hvd.allreduce(tf.ones([4]), grace=grace_from_params(TOPK))


@pytest.mark.parametrize("compressor", ["none", "topk", "qsgd"])
def test_a_scalar_variable_steps_in_a_tf_function(one_process_world, compressor):
    """tf.numpy_function hands a 0-d tensor over as a NumPy scalar, which the step refused
    ("expected a torch tensor or a NumPy array, got float32") for every compressor."""
    grc = tf_grace_from_params({"compressor": compressor, "communicator": "allgather",
                                "memory": "residual" if compressor == "topk" else "none"})
    temperature, w = tf.Variable(2.0, name="temperature"), tf.Variable(tf.ones([3]), name="w")

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = temperature * tf.reduce_sum(w)
        return hvd.DistributedGradientTape(tape, grace=grc).gradient(loss, [temperature, w])

    scalar, vector = step()
    assert scalar.shape == () and scalar.numpy() == 3.0 and vector.shape == (3,)


def test_keras_distributed_optimizer_trains_and_refuses_xla(one_process_world):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 6)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)

    def build(jit_compile):
        model = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(2, activation="softmax")])
        opt = hvd_keras.DistributedOptimizer(tf.keras.optimizers.SGD(0.5), grace=grace_from_params(TOPK))
        assert isinstance(opt, tf.keras.optimizers.SGD) and type(opt).__name__ == "SGD"
        model.compile(loss="sparse_categorical_crossentropy", optimizer=opt, jit_compile=jit_compile)
        return model

    history = build(False).fit(x, y, batch_size=16, epochs=3, verbose=0).history["loss"]
    assert history[-1] < history[0]
    with pytest.raises(Exception, match="jit_compile=False"):
        build(True).fit(x, y, batch_size=16, epochs=1, verbose=0)


def test_keras_distributed_optimizer_averages_under_a_loss_scaler_and_through_apply(one_process_world):
    """compile() wraps the optimizer in a LossScaleOptimizer under mixed_float16, whose
    apply calls the inner optimizer's apply, and Keras 3 scripts may call ``apply``
    themselves: the override of apply_gradients alone was passed by both, and each rank
    applied its own gradients. Counted here by the communicator's steps."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 6)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    grc = grace_from_params(TOPK)

    def steps_taken():
        return sum(s.calls for s in grc.stats.per_name.values())

    before = steps_taken()
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(2, activation="softmax")])
        opt = hvd_keras.DistributedOptimizer(tf.keras.optimizers.SGD(0.5), grace=grc)
        assert isinstance(opt, tf.keras.mixed_precision.LossScaleOptimizer)  # the loss scaler averages
        model.compile(loss="sparse_categorical_crossentropy", optimizer=opt, jit_compile=False)
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    finally:
        tf.keras.mixed_precision.set_global_policy("float32")
    assert model.optimizer is opt and steps_taken() - before == 2 * 4  # two tensors, four batches
    before = steps_taken()
    direct = hvd_keras.DistributedOptimizer(tf.keras.optimizers.SGD(1.0), grace=grc)
    direct.apply([tf.constant([0.5, -1.0])], [tf.Variable([1.0, 2.0], name="v")])
    assert steps_taken() - before == 1


def test_a_loss_scaler_around_the_distributed_optimizer_is_refused(one_process_world):
    """A LossScaleOptimizer around ours looks for an overflow in this rank's gradients
    before they are averaged: a rank that overflowed skipped the exchange its peer waited
    in (a hang), and under mixed_float16, where ours is the scaler already, the gradients
    were unscaled twice (updates 32768 times too small). Both ways it comes about are
    refused at the first fit: wrapped by hand, or made before the policy and wrapped by
    compile()."""
    x, y = np.ones((8, 4), np.float32), np.zeros((8, 1), np.float32)

    def fit(make_optimizer):
        model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1, dtype="float32")])
        model.compile(loss="mse", optimizer=make_optimizer(), jit_compile=False)
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)

    made_before = hvd_keras.DistributedOptimizer(tf.keras.optimizers.SGD(0.01))
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        scaler = tf.keras.mixed_precision.LossScaleOptimizer
        for make, twice in ((lambda: scaler(hvd_keras.DistributedOptimizer(tf.keras.optimizers.SGD(0.01))), True),
                            (lambda: made_before, False)):
            with pytest.raises(ValueError, match="cannot be wrapped in a LossScaleOptimizer") as refused:
                fit(make)
            assert ("unscaled twice" in str(refused.value)) == twice
        fit(lambda: hvd_keras.DistributedOptimizer(scaler(tf.keras.optimizers.SGD(0.01))))  # the right way round
    finally:
        tf.keras.mixed_precision.set_global_policy("float32")


def test_the_distributed_optimizer_is_the_optimizer_with_all_its_state(one_process_world):
    """It was a copy made from the optimizer's config, which lost what the config does not
    hold: AdamW decayed the weights it was told to leave alone."""
    def decayed(wrap):
        layer = tf.keras.layers.Dense(2, kernel_initializer="ones", bias_initializer="ones")
        layer.build((None, 3))
        adamw = tf.keras.optimizers.AdamW(learning_rate=0.1, weight_decay=0.5)
        adamw.exclude_from_weight_decay(var_list=[layer.kernel])
        optimizer = wrap(adamw)
        optimizer.apply([tf.zeros_like(layer.kernel), tf.zeros_like(layer.bias)], [layer.kernel, layer.bias])
        return float(layer.kernel[0, 0]), float(layer.bias[0])
    assert decayed(hvd_keras.DistributedOptimizer) == decayed(lambda o: o) == (1.0, np.float32(0.95))
    once = hvd_keras.DistributedOptimizer(tf.keras.optimizers.SGD(0.1))
    with pytest.raises(ValueError, match="wrap the optimizer once"):
        hvd_keras.DistributedOptimizer(once)


@pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")  # Keras pickling its weights
def test_a_model_saved_with_the_distributed_optimizer_loads_and_clones(one_process_world, tmp_path):
    """Its class, made in our module, was recorded there: load_model, clone_model and
    unpickling the model failed ("Could not locate class 'SGD'"), and a copy of the
    optimizer from its config did not average. Saved as the plain optimizer now, as
    Horovod's; hvd.load_model (GRACE's takes grace) makes it distributed again."""
    import pickle
    grc = grace_from_params(TOPK)
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
    model.compile(loss="mse", optimizer=hvd_keras.DistributedOptimizer(tf.keras.optimizers.SGD(0.1), grace=grc),
                  jit_compile=False)
    model.fit(np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32), verbose=0)
    model.save(tmp_path / "m.keras")
    assert type(tf.keras.models.load_model(tmp_path / "m.keras").optimizer) is tf.keras.optimizers.SGD
    tf.keras.models.clone_model(model)
    pickle.loads(pickle.dumps(model))
    copy = type(model.optimizer).from_config(model.optimizer.get_config())
    steps = sum(s.calls for s in grc.stats.per_name.values())
    copy.apply([tf.ones([2])], [tf.Variable([1.0, 2.0])])
    assert sum(s.calls for s in grc.stats.per_name.values()) == steps + 1  # the copy averages
    loaded = hvd_keras.load_model(tmp_path / "m.keras", grace=grc)
    assert isinstance(loaded.optimizer, hvd_keras._DistributedOptimizer) and loaded.optimizer.learning_rate == 0.1
    # TensorFlow's module takes GRACE's order: name second, and TensorFlow 1's use_locking
    named = hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.1), "mine", use_locking=False)
    assert named.name == "mine"


def test_horovods_options_misspellings_and_shapes(one_process_world):
    sgd = tf.keras.optimizers.SGD
    with pytest.raises(TypeError, match="unexpected keyword argument 'grc'"):  # trained dense without a word
        hvd_keras.DistributedOptimizer(sgd(0.1), grc=grace_from_params(TOPK))
    with pytest.raises(TypeError, match="grace must be a communicator.*got dict"):
        hvd_keras.DistributedOptimizer(sgd(0.1), grace=TOPK)
    with pytest.raises(TypeError, match="grace must be a communicator.*got dict"):
        hvd.DistributedGradientTape(tf.GradientTape(), grace=TOPK)
    for option, message in (({"gradient_predivide_factor": 0.5}, "gradient_predivide_factor"),
                            ({"num_groups": 2}, "grouped allreduce"), ({"process_set": object()}, "process_set")):
        with pytest.raises(ValueError, match=message):
            hvd_keras.DistributedOptimizer(sgd(0.1), **option)
    hvd_keras.DistributedOptimizer(sgd(0.1), gradient_predivide_factor=1.0, num_groups=0,
                                   average_aggregated_gradients=False)  # Horovod's defaults, as scripts pass them
    v = tf.Variable(3.0)
    with hvd.DistributedGradientTape(tf.GradientTape()) as tape:  # Horovod's tape is one
        loss = v * v
    assert tape.gradient(loss, [v])[0].numpy() == 6.0
    # a tensor of unknown rank: the result's rank is unknown too (it was said to be 1)
    gather = tf.function(lambda t: hvd.allgather(t), input_signature=[tf.TensorSpec(None, tf.float32)])
    assert gather.get_concrete_function().structured_outputs.shape.rank is None
    assert gather(tf.ones([2, 3])).shape == (2, 3)


def test_tensorflow_and_torch_share_horovods_op_rules(one_process_world):
    import deepreduce.torch.horovod as torch_hvd
    assert (hvd.Average, hvd.Sum) == (hvd_keras.Average, hvd_keras.Sum) == (torch_hvd.Average, torch_hvd.Sum)
    assert hvd.Compression is hvd_keras.Compression is torch_hvd.Compression
    for refused in (lambda: hvd.allreduce(tf.ones([2]), op=hvd.Adasum),
                    lambda: hvd.DistributedGradientTape(tf.GradientTape(), op=hvd.Adasum),
                    lambda: hvd_keras.DistributedOptimizer(tf.keras.optimizers.SGD(0.1), op=hvd_keras.Adasum)):
        with pytest.raises(ValueError, match="Adasum"):
            refused()
    with pytest.raises(ValueError, match="compressor': 'fp16'"):
        hvd_keras.DistributedOptimizer(tf.keras.optimizers.SGD(0.1), compression=hvd_keras.Compression.fp16)
    with pytest.raises(ValueError, match="only op="):  # Horovod's rule: op supersedes the deprecated flag
        hvd.allreduce(tf.ones([2]), average=True, op=hvd.Sum)
    with pytest.raises(ValueError, match="backward_passes_per_step"):
        hvd_keras.DistributedOptimizer(tf.keras.optimizers.SGD(0.1), backward_passes_per_step=2)


def test_the_call_shapes_need_init_first():
    world.shutdown()
    with pytest.raises(ValueError, match="hvd.init"):
        hvd_keras.DistributedOptimizer(tf.keras.optimizers.SGD(0.1))
    with pytest.raises(ValueError, match="hvd.init"):
        hvd.size()


def _mixed_kinds(rank, world_size, methods, steps):
    """Rank 0 steps TensorFlow tensors through grace_dl.tensorflow, rank 1 torch tensors
    through grace_dl.torch: each decodes the other's frames in the allgather."""
    import torch
    if rank == 0:
        from grace_dl.tensorflow.helper import grace_from_params as factory
    else:
        from grace_dl.torch.helper import grace_from_params as factory
    out = {}
    for method in methods:
        grc = factory({"compressor": method, "memory": "none", "communicator": "allgather",
                       "compress_ratio": 0.05, "quantiles": 64, "quantum_num": 64})
        fresh = copy.deepcopy(grc.compressor)  # the same state, to encode the first step again with torch
        sent = []
        compress = grc.compressor.compress

        def recording(tensor, name, compress=compress, sent=sent):
            payload, ctx = compress(tensor, name)
            sent.append(edge.as_numpy(payload[0]).tobytes())
            return payload, ctx

        grc.compressor.compress = recording
        results = []
        for step in range(steps):
            g = gradients(100 * rank + step, shapes=((40, 25),))[0]
            kind = tf.constant(g) if rank == 0 else torch.from_numpy(g)
            result = grc.step(kind, "layer.weight")
            results.append(result.numpy())
            if step == 0 and rank == 0:  # the frame TF sent is the frame torch would send
                torch_frame = edge.as_numpy(fresh.compress(torch.from_numpy(g), "layer.weight")[0][0]).tobytes()
                assert torch_frame == sent[0], f"{method}: TF and torch frames differ"
        out[method] = (results, sent)
    return out


@pytest.mark.slow
def test_a_tf_rank_and_a_torch_rank_decode_each_others_frames():
    steps = 2
    ranks = run(_mixed_kinds, 2, TF_ONLY, steps, timeout=240)
    for method in TF_ONLY:
        (tf_results, tf_sent), (torch_results, torch_sent) = ranks[0][method], ranks[1][method]
        decoder = tf_grace_from_params({"compressor": method, "quantiles": 64}).compressor
        _, ctx = decoder.compress(np.zeros((40, 25), np.float32), "probe")
        for step in range(steps):
            np.testing.assert_array_equal(tf_results[step], torch_results[step])  # bit-identical ranks
            both = [decoder.decompress([np.frombuffer(frames[step], np.uint8)], ctx)
                    for frames in (tf_sent, torch_sent)]
            np.testing.assert_allclose(tf_results[step], (both[0] + both[1]) / 2, rtol=1e-6, atol=1e-9)
            assert np.isfinite(tf_results[step]).all() and np.abs(tf_results[step]).max() > 0


def _tf_collectives(rank, world_size):
    hvd.init()  # binds the gloo group the pool started
    try:
        mean = hvd.allreduce(tf.constant([float(rank), 2.0]), name="metric")
        total = hvd.allreduce(tf.constant([rank + 1]), op=hvd.Sum)
        assert hvd.allreduce(tf.constant([rank + 1]), average=False).numpy().tolist() == total.numpy().tolist()
        gathered = tf.function(lambda t: hvd.allgather(t))(tf.fill([rank + 1, 2], float(rank)))
        # Rows of another width on one rank: rank 0 read garbage rows before, rank 1 failed.
        with pytest.raises(Exception, match="the ranks' tensors differ in dtype or in the dimensions"):
            hvd.allgather(tf.ones([2, 2 + rank]))
        root_value = hvd.broadcast(tf.constant([rank * 10.0]), root_rank=1)
        variables = [tf.Variable(tf.fill([3], float(rank))), tf.Variable(rank, dtype=tf.int64)]

        @tf.function
        def broadcast_in_a_graph():
            hvd.broadcast_variables(variables, root_rank=0)

        broadcast_in_a_graph()
        # An unnamed collective in a function one rank retraces (its last batch is shorter):
        # tagged by their count, the ranks' exchanges paired up wrongly, then hung.
        summed = tf.function(lambda t: hvd.allreduce(tf.reduce_sum(t), op=hvd.Sum))
        losses = [float(summed(tf.ones([2 if rank == 0 and batch == 2 else 4]))) for batch in range(3)]
        # bfloat16 (mixed_bfloat16's gradients): NumPy cannot sum it, the dense mean failed
        half = hvd.allreduce(tf.constant([rank + 1.0, 3.0], dtype=tf.bfloat16), name="bf16")
        # an embedding's gradient: reduced as Horovod reduces it, an IndexedSlices again
        rows = hvd.allreduce(tf.IndexedSlices(tf.fill([1, 2], rank + 1.0), tf.constant([rank * 3]),
                                              tf.constant([4, 2])), name="rows")
        # ... and where the reduced tensor has the batch's shape, the retraced rank's call
        # shares the others' tag with fewer elements: refused on both (rank 0 got a cut
        # result, rank 1 hung)
        per_example = tf.function(lambda t: hvd.allreduce(t * 2.0, op=hvd.Sum))
        per_example(tf.ones([4]))
        with pytest.raises(Exception, match="element counts differ across ranks"):
            per_example(tf.ones([2 if rank == 0 else 4]))
        return (mean.numpy().tolist(), total.numpy().tolist(), gathered.numpy().tolist(), root_value.numpy().tolist(),
                variables[0].numpy().tolist(), int(variables[1].numpy()), hvd.size(), losses,
                (half.dtype.name, half.numpy().astype(np.float32).tolist()),
                (type(rows).__name__, rows.indices.numpy().tolist(), rows.values.numpy().tolist()))
    finally:
        world.shutdown()


@pytest.mark.slow
def test_tensorflow_collectives_over_gloo():
    for mean, total, gathered, root_value, weights, step, size, losses, half, rows in run(_tf_collectives, 2,
                                                                                           timeout=240):
        assert mean == [0.5, 2.0] and total == [3] and size == 2
        assert gathered == [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]
        assert root_value == [10.0] and weights == [0.0, 0.0, 0.0] and step == 0
        assert losses == [8.0, 8.0, 6.0]
        assert half == ("bfloat16", [1.5, 3.0])
        assert rows == ("IndexedSlices", [0, 3], [[0.5, 0.5], [1.0, 1.0]])
