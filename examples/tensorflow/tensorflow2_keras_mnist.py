# GRACE's TensorFlow 2 Keras MNIST example (sands-lab/grace, examples/tensorflow/
# tensorflow2_keras_mnist.py, itself after Horovod's), written for deepreduce. What differs
# from GRACE's script, line by line, is listed in docs/tensorflow.md; in short: Horovod is
# deepreduce's (no patched Horovod needed), MNIST is read from its IDX files (no download),
# the run's length and the GRACE params are flags, and Keras 3 wants jit_compile=False.
#
#   mpirun -np 2 python examples/tensorflow/tensorflow2_keras_mnist.py --data-dir DIR
import argparse
import hashlib
import json

import tensorflow as tf

import deepreduce.tensorflow.horovod.keras as hvd
from deepreduce.idx import load_mnist
from grace_dl.tensorflow.communicator.allgather import Allgather
from grace_dl.tensorflow.compressor.topk import TopKCompressor
from grace_dl.tensorflow.helper import grace_from_params
from grace_dl.tensorflow.memory.residual import ResidualMemory

parser = argparse.ArgumentParser(description='TensorFlow 2 Keras MNIST with GRACE')
parser.add_argument('--data-dir', required=True, help='folder with the MNIST IDX files')
parser.add_argument('--epochs', type=int, default=24)
parser.add_argument('--steps', type=int, default=500, help='steps per epoch, before dividing by the world size')
parser.add_argument('--batch-size', type=int, default=128)
parser.add_argument('--params', default=None,
                    help="GRACE params as JSON (default: GRACE's Allgather(TopKCompressor(0.3), ResidualMemory()))")
parser.add_argument('--checkpoint-dir', default='.')
args = parser.parse_args()

# Horovod: initialize Horovod.
hvd.init()

# Horovod: pin GPU to be used to process local rank (one GPU per process)
gpus = tf.config.experimental.list_physical_devices('GPU')
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')

(mnist_images, mnist_labels), _ = load_mnist(args.data_dir)

dataset = tf.data.Dataset.from_tensor_slices(
    (tf.cast(mnist_images[..., tf.newaxis] / 255.0, tf.float32),
     tf.cast(mnist_labels, tf.int64))
)
dataset = dataset.repeat().shuffle(10000).batch(args.batch_size)

mnist_model = tf.keras.Sequential([
    tf.keras.layers.Conv2D(32, [3, 3], activation='relu'),
    tf.keras.layers.Conv2D(64, [3, 3], activation='relu'),
    tf.keras.layers.MaxPooling2D(pool_size=(2, 2)),
    tf.keras.layers.Dropout(0.25),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(128, activation='relu'),
    tf.keras.layers.Dropout(0.5),
    tf.keras.layers.Dense(10, activation='softmax')
])

# Horovod: adjust learning rate based on number of workers.
opt = tf.optimizers.Adam(0.001 * hvd.size())

# GRACE: compression algorithm
if args.params:
    grc = grace_from_params(json.loads(args.params))
else:
    grc = Allgather(TopKCompressor(0.3), ResidualMemory(), hvd.size())

# Horovod: add Horovod DistributedOptimizer.
opt = hvd.DistributedOptimizer(opt, grace=grc)

# Keras 3 compiles the step with XLA unless told not to; the distributed optimizer's
# exchange must run in the step (GRACE: experimental_run_tf_function=False).
mnist_model.compile(loss=tf.losses.SparseCategoricalCrossentropy(),
                    optimizer=opt,
                    metrics=['accuracy'],
                    jit_compile=False)

callbacks = [
    # Horovod: broadcast initial variable states from rank 0 to all other processes, so
    # that every worker starts from the same weights.
    hvd.callbacks.BroadcastGlobalVariablesCallback(0),

    # Horovod: average metrics among workers at the end of every epoch (before any
    # metrics-based callback).
    hvd.callbacks.MetricAverageCallback(),

    # Horovod: raise the learning rate to its scaled value over the first three epochs
    # (Goyal et al., https://arxiv.org/abs/1706.02677).
    hvd.callbacks.LearningRateWarmupCallback(warmup_epochs=3, verbose=1),
]

# Horovod: save checkpoints only on worker 0 to prevent other workers from corrupting them.
if hvd.rank() == 0:
    callbacks.append(tf.keras.callbacks.ModelCheckpoint(args.checkpoint_dir + '/checkpoint-{epoch}.keras'))

# Horovod: write logs on worker 0.
verbose = 1 if hvd.rank() == 0 else 0

# Train the model.
# Horovod: adjust number of steps based on number of workers.
history = mnist_model.fit(dataset, steps_per_epoch=args.steps // hvd.size(), callbacks=callbacks,
                          epochs=args.epochs, verbose=verbose)

losses = history.history['loss']
digest = hashlib.sha256(b''.join(w.tobytes() for w in mnist_model.get_weights())).hexdigest()
print('rank %d: loss %.6f -> %.6f, weights sha256 %s' % (hvd.rank(), losses[0], losses[-1], digest))
