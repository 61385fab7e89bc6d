"""Progress of spawned workers, shown by the process that started them.

A worker's stdout and stderr are not the notebook cell that started the run: in Jupyter
they go to the kernel's terminal. So rank 0 sends its progress through a queue
(``ChannelBar``, tqdm's interface) and the starting process draws the bars
(``BarBoard``, with ``tqdm.auto``: a widget in a notebook, text in a terminal)."""
import queue as queue_module


class ChannelBar:
    """The part of tqdm's interface the training loop uses, sent over ``channel``."""

    def __init__(self, channel, label, total):
        self.channel = channel
        self.label = label
        channel.put(("open", label, total))

    def update(self, n=1):
        self.channel.put(("update", self.label, n))

    def set_postfix(self, values):
        self.channel.put(("postfix", self.label, dict(values)))

    def close(self):
        self.channel.put(("close", self.label, None))


class BarBoard:
    """Draws the bars the messages on ``channel`` describe, one per run label."""

    def __init__(self, channel):
        self.channel = channel
        self.bars = {}

    def drain(self):
        """Apply every message waiting on the channel (never blocks)."""
        while True:
            try:
                kind, label, value = self.channel.get_nowait()
            except queue_module.Empty:
                return
            if kind == "open":
                from tqdm.auto import tqdm
                self.bars[label] = tqdm(total=value, desc=label, unit="step")
            elif label in self.bars:
                bar = self.bars[label]
                if kind == "update":
                    bar.update(value)
                elif kind == "postfix":
                    bar.set_postfix(value)
                else:
                    bar.close()
                    del self.bars[label]

    def close(self):
        self.drain()
        for bar in self.bars.values():
            bar.close()
        self.bars.clear()
