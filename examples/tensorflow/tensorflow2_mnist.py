# GRACE's TensorFlow 2 GradientTape MNIST example (sands-lab/grace, examples/tensorflow/
# tensorflow2_mnist.py, itself after Horovod's), written for deepreduce. What differs from
# GRACE's script is listed in docs/tensorflow.md; in short: Horovod is deepreduce's, MNIST
# is read from its IDX files, the run's length and the GRACE params are flags, and the
# Keras 3 optimizer's variables are a property.
#
#   mpirun -np 2 python examples/tensorflow/tensorflow2_mnist.py --data-dir DIR
import argparse
import hashlib
import json

import tensorflow as tf

import deepreduce.tensorflow.horovod as hvd
from deepreduce.idx import load_mnist
from grace_dl.tensorflow.communicator.allgather import Allgather
from grace_dl.tensorflow.compressor.topk import TopKCompressor
from grace_dl.tensorflow.helper import grace_from_params
from grace_dl.tensorflow.memory.residual import ResidualMemory

parser = argparse.ArgumentParser(description='TensorFlow 2 GradientTape MNIST with GRACE')
parser.add_argument('--data-dir', required=True, help='folder with the MNIST IDX files')
parser.add_argument('--steps', type=int, default=10000, help='steps, before dividing by the world size')
parser.add_argument('--batch-size', type=int, default=128)
parser.add_argument('--params', default=None,
                    help="GRACE params as JSON (default: GRACE's Allgather(TopKCompressor(0.3), ResidualMemory()))")
parser.add_argument('--checkpoint-dir', default='./checkpoints')
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
loss = tf.losses.SparseCategoricalCrossentropy()

# Horovod: adjust learning rate based on number of workers.
opt = tf.optimizers.Adam(0.001 * hvd.size())

checkpoint = tf.train.Checkpoint(model=mnist_model, optimizer=opt)

# GRACE: compression algorithm
if args.params:
    grc = grace_from_params(json.loads(args.params))
else:
    grc = Allgather(TopKCompressor(0.3), ResidualMemory(), hvd.size())


@tf.function
def training_step(images, labels, first_batch):
    with tf.GradientTape() as tape:
        probs = mnist_model(images, training=True)
        loss_value = loss(labels, probs)

    # Horovod: add Horovod Distributed GradientTape.
    tape = hvd.DistributedGradientTape(tape, grace=grc)

    grads = tape.gradient(loss_value, mnist_model.trainable_variables)
    opt.apply_gradients(zip(grads, mnist_model.trainable_variables))

    # Horovod: broadcast initial variable states from rank 0 to all other processes, after
    # the first gradient step so that the optimizer's state exists.
    if first_batch:
        hvd.broadcast_variables(mnist_model.variables, root_rank=0)
        hvd.broadcast_variables(opt.variables, root_rank=0)

    return loss_value


# Horovod: adjust number of steps based on number of workers.
losses = []
for batch, (images, labels) in enumerate(dataset.take(args.steps // hvd.size())):
    loss_value = training_step(images, labels, batch == 0)
    losses.append(float(loss_value))

    if batch % 10 == 0 and hvd.local_rank() == 0:
        print('Step #%d\tLoss: %.6f' % (batch, loss_value))

# Horovod: save checkpoints only on worker 0 to prevent other workers from corrupting it.
if hvd.rank() == 0:
    checkpoint.save(args.checkpoint_dir + '/ckpt')

digest = hashlib.sha256(b''.join(w.tobytes() for w in mnist_model.get_weights())).hexdigest()
print('rank %d: loss %.6f -> %.6f, weights sha256 %s' % (hvd.rank(), losses[0], losses[-1], digest))
