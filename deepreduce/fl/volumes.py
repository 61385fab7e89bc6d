"""Relative volumes on the paper's LSTM layout without training it to convergence: one
realistic client update (a few local SGD steps of the 4,053,428-parameter model on the
generated corpus, the paper's lr 0.3 and batch 16), put through each configuration's
message once, each way. The volume of top-r and of the index codecs depends on the layout
and r, not on the values; the value codecs' (polyfit) depends on the update's shape, which
the real update gives."""
import time

import torch

from . import wire
from .direction import Direction
from .settings import Settings
from .tasks import build_task, model_state


def lstm_update(seed=0, sentences=64, batch_size=16, lr=0.3):
    """The update (name -> tensor) of one client's local epoch from the initial model."""
    settings = Settings(model="lstm", clients=1, sentences=sentences, batch_size=batch_size, lr=lr, seed=seed)
    task = build_task(settings)
    model = task.model()
    start = model_state(model)
    trained = task.train(model, task.shards[0], settings, 1, 0)
    return {name: trained[name] - start[name] for name in start}


def message_costs(params, update, compress_1d=False):
    """(message bytes, encode seconds, decode seconds) of one C2S message of ``update``."""
    sender = Direction(params, None, compress_1d, "c2s")
    receiver = Direction(params, False, compress_1d, "c2s")
    shapes = {name: t.shape for name, t in update.items()}
    receiver.decode(sender.encode(update, "probe", wire.C2S, 0, 0)[0], shapes, wire.C2S, 0)  # ctx, warm-up
    message, encode_seconds = sender.encode(update, "client0", wire.C2S, 1, 0)
    decode_seconds = receiver.decode(message, shapes, wire.C2S, 1)[2]
    return message.nbytes, encode_seconds, decode_seconds


def relative_volumes(rows, update=None):
    """{label: (relative volume, encode s, decode s)} of each params dict in ``rows``."""
    update = lstm_update() if update is None else update
    dense = 4 * sum(t.numel() for t in update.values())
    out = {}
    for label, params in rows.items():
        nbytes, enc, dec = message_costs(params, update)
        out[label] = (nbytes / dense, enc, dec)
    return out


if __name__ == "__main__":
    from .table import PAPER_ROWS, PAPER_VOLUMES, TOPR
    torch.set_num_threads(1)
    start = time.perf_counter()
    rows = dict(PAPER_ROWS, **{"top-k frame (bitmap)": TOPR})
    for label, (volume, enc, dec) in relative_volumes(rows).items():
        paper = PAPER_VOLUMES.get(label)
        print(f"{label:<22} {volume:.4f} (paper {paper})  encode {enc:.3f}s decode {dec:.3f}s")
    print(f"{time.perf_counter() - start:.1f}s")
