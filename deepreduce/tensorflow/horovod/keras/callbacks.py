"""``horovod.tensorflow.keras.callbacks``: the callbacks GRACE's Keras example uses."""
import numpy as np
import tensorflow as tf

from ....world import current


def _variables_of(model):
    from . import _model_variables
    return _model_variables(model)


class BroadcastGlobalVariablesCallback(tf.keras.callbacks.Callback):
    """Broadcast root's weights and optimizer state to every rank after the first batch
    (the optimizer makes its state at its first step), as Horovod does."""

    def __init__(self, root_rank, device=""):
        super().__init__()
        self.root_rank = root_rank
        self.done = False

    def on_train_batch_end(self, batch, logs=None):
        if self.done:
            return
        from .. import broadcast_variables
        broadcast_variables(_variables_of(self.model), self.root_rank)
        self.done = True


class MetricAverageCallback(tf.keras.callbacks.Callback):
    """At the end of every epoch, replace each metric in ``logs`` by its mean over ranks
    (every rank has the same metric names, so they are exchanged in sorted order)."""

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        world = current()
        keys = sorted(k for k, v in logs.items() if np.ndim(v) == 0)
        values = np.array([float(logs[k]) for k in keys], dtype=np.float64)
        summed = world.transport.allreduce(values, f"metric_average.epoch{epoch}")
        for key, value in zip(keys, summed / world.size):
            logs[key] = float(value)


class LearningRateWarmupCallback(tf.keras.callbacks.Callback):
    """Goyal et al.'s gradual warm-up: the learning rate rises linearly from
    ``initial_lr / size`` to ``initial_lr`` over ``warmup_epochs`` (``initial_lr``:
    the optimizer's at the start of training when not given, already scaled by size)."""

    def __init__(self, initial_lr=None, warmup_epochs=5, momentum_correction=True, steps_per_epoch=None,
                 verbose=0):
        super().__init__()
        self.initial_lr = initial_lr
        self.warmup_epochs = warmup_epochs
        self.steps_per_epoch = steps_per_epoch
        self.verbose = verbose
        self.epoch = 0

    def _learning_rate(self):
        return self.model.optimizer.learning_rate

    def on_train_begin(self, logs=None):
        if self.initial_lr is None:
            self.initial_lr = float(np.asarray(self._learning_rate()))
        if self.steps_per_epoch is None:
            self.steps_per_epoch = (self.params or {}).get("steps")
        if not self.steps_per_epoch:
            raise ValueError("LearningRateWarmupCallback needs steps_per_epoch (pass it, or give fit() steps_per_epoch)")

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if self.epoch >= self.warmup_epochs:
            return
        size = current().size
        progress = self.epoch + batch / self.steps_per_epoch
        self._learning_rate().assign(self.initial_lr / size * (progress * (size - 1) / self.warmup_epochs + 1))

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.warmup_epochs - 1:
            self._learning_rate().assign(self.initial_lr)
            if self.verbose and current().rank == 0:
                print(f"\nEpoch {epoch + 1}: finished gradual learning rate warmup to {self.initial_lr:g}.")
