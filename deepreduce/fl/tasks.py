"""The data, model, local training and evaluation of a federated run, per model:

- ``mobilenet`` (default) and ``cnn``: the embedded digits (scikit-learn's 1,797 8x8
  images; the test split of ``deepreduce train``), split among the clients by
  Dirichlet(alpha) over the labels, or IID.
- ``lstm``: the paper's next-word LSTM (4,053,428 parameters) on the generated corpus of
  ``deepreduce.fl.text``; each client is one writer (alpha: its topic mix).
"""
import torch
import torch.nn.functional as F

from ..train.data.shard import generator
from .models import PAD, MobileNetSmall, NextWordLSTM
from .partition import dirichlet_partition, iid_partition


def model_state(model):
    """The floating-point state a round communicates (parameters and norm statistics), by
    name, as detached copies."""
    return {name: t.detach().clone() for name, t in model.state_dict().items() if t.is_floating_point()}


class Task:
    """Shards (one (inputs, targets) pair per client), the test pair, and how to train and
    score a model on them."""

    metric_name = "accuracy"

    def __init__(self, make_model, shards, test, ignore_index=-100):
        self.make_model, self.shards, self.test = make_model, shards, test
        self.ignore_index = ignore_index  # targets not scored (the text model's padding)

    def model(self):
        return self.make_model()

    def loss(self, model, inputs, targets):
        logits = model(inputs)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                               ignore_index=self.ignore_index)

    def train(self, model, data, settings, round_, cid):
        """``settings.local_epochs`` epochs of minibatches on ``data``, shuffled by a stream
        of (seed, round, client); returns the trained state."""
        model.train()
        params = model.parameters()
        optimizer = (torch.optim.Adam(params, lr=settings.lr) if settings.optimizer == "adam"
                     else torch.optim.SGD(params, lr=settings.lr))
        inputs, targets = data
        for epoch in range(settings.local_epochs):
            order = torch.randperm(len(inputs), generator=generator(settings.seed, round_, cid, epoch))
            for batch in order.split(settings.batch_size):
                if len(batch) == 1 and len(order) > 1 and settings.batch_size > 1:
                    # Batch norm trains on two examples or more: a lone last one is left out
                    # of this epoch. With batch_size 1 every batch is one (all were skipped).
                    continue
                optimizer.zero_grad(set_to_none=True)
                self.loss(model, inputs[batch], targets[batch]).backward()
                optimizer.step()
        return model_state(model)

    @torch.no_grad()
    def evaluate(self, model, state, batch=256):
        """(accuracy, mean loss) of ``state`` on the test pair; scored targets only."""
        model.load_state_dict(state, strict=False)
        model.eval()
        inputs, targets = self.test
        correct = total = 0
        loss = 0.0
        for start in range(0, len(inputs), batch):
            logits = model(inputs[start:start + batch])
            y = targets[start:start + batch]
            logits, y = logits.reshape(-1, logits.shape[-1]), y.reshape(-1)
            scored = y != self.ignore_index
            correct += (logits.argmax(-1)[scored] == y[scored]).sum().item()
            total += scored.sum().item()
            loss += F.cross_entropy(logits, y, ignore_index=self.ignore_index, reduction="sum").item()
        return correct / total, loss / total


def build_task(settings):
    """The Task of ``settings`` (checked when the Settings were made)."""
    seed = settings.seed
    if settings.model == "lstm":
        from .text import client_corpora
        shards, test = client_corpora(settings.clients, settings.sentences, settings.alpha, seed)

        def make_model():
            torch.manual_seed(seed)
            return NextWordLSTM()
        return Task(make_model, shards, test, ignore_index=PAD)

    from ..train.data.digits import load_digits_dataset
    from ..train.models import SmallCNN
    data = load_digits_dataset()
    x, y = data.train
    parts = (iid_partition(len(y), settings.clients, seed) if settings.alpha is None
             else dirichlet_partition(y.numpy(), settings.clients, settings.alpha, seed, min_size=2))
    shards = [(x[torch.as_tensor(p)], y[torch.as_tensor(p)]) for p in parts]
    cls = MobileNetSmall if settings.model == "mobilenet" else SmallCNN

    def make_model():
        torch.manual_seed(seed)
        return cls(in_shape=tuple(data.meta["in_shape"]), num_classes=data.meta["num_classes"])
    return Task(make_model, shards, data.test)
