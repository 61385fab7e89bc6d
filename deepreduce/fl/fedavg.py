"""FedAvg with two-way compression: the DeepReduce paper's Algorithm 2.

Every round the server samples ``per_round`` of the ``clients``; each sampled client
receives the server's update (server-to-client, S2C), applies it to its copy of the model,
trains ``local_epochs`` epochs on its own data, and sends its model change back
(client-to-server, C2S); the server averages the decoded changes (weighted by the
clients' example counts, or uniformly as Algorithm 2 writes it) and adds them, times
``server_lr``, to the global model.

Which update the server sends (``s2c_update``), the two readings of Algorithm 2's
``DR(x_t - x_0)``:

- ``'client'``: the change of the global model since what *this client* holds (x_0 for a
  client's first round): one message per sampled client, and the server's error feedback
  keeps one residual per client, so client copy + residual = the global model at the
  client's last round.
- ``'round'``: the change of the global model over the previous round, encoded once per
  round and sent to every sampled client; a client that missed rounds receives every
  message it missed (each counted in the S2C bytes). One server residual for all.

Clients and the server are objects; ``simulate`` runs all of them in this process, one
client after the other (many clients multiplexed per process), and ``deepreduce.fl.procs``
runs the same objects in gloo processes.
"""
import time
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import FrameError
from . import wire
from .direction import Direction
from .settings import Settings
from .tasks import build_task, model_state


def sample_clients(settings, round_):
    """The sorted client ids of ``round_``: the same in every process (seeded by round)."""
    rng = np.random.default_rng([settings.seed, round_, 7])
    return sorted(int(k) for k in rng.choice(settings.clients, size=settings.sampled, replace=False))


class Client:
    """One client: its data, the copy of the model it holds (built from what the server
    sent), and, in its C2S direction, its error-feedback residuals."""

    def __init__(self, cid, data, start, task, settings, c2s, s2c):
        self.cid = cid
        self.data = data
        self.copy = {name: t.clone() for name, t in start.items()}
        self.task, self.settings, self.c2s, self.s2c = task, settings, c2s, s2c
        self.shapes = {name: t.shape for name, t in start.items()}

    @property
    def examples(self):
        return len(self.data[0])

    def receive(self, messages):
        """Apply the server's messages [(round, message)]; returns decode seconds."""
        seconds = 0.0
        for round_, message in messages:
            sender, update, spent = self.s2c.decode(message, self.shapes, wire.S2C, round_)
            if sender != wire.SERVER:
                raise FrameError(f"client {self.cid}: a server-to-client message from sender {sender}")
            for name, delta in update.items():
                self.copy[name] += delta
            seconds += spent
        return seconds

    def train(self, model, round_):
        """Local epochs from the copy; returns (message, encode seconds, train seconds)."""
        start = time.perf_counter()
        model.load_state_dict(self.copy, strict=False)
        trained = self.task.train(model, self.data, self.settings, round_, self.cid)
        update = {name: trained[name] - self.copy[name] for name in self.copy}
        train_seconds = time.perf_counter() - start
        message, encode_seconds = self.c2s.encode(update, f"client{self.cid}", wire.C2S, round_, self.cid)
        return message, encode_seconds, train_seconds


class Server:
    """The global model, what each client holds (or the log of round messages), the S2C
    error feedback, and the running weighted sum of the round's decoded client updates."""

    def __init__(self, start, settings, s2c, c2s):
        self.model = {name: t.clone() for name, t in start.items()}
        self.shapes = {name: t.shape for name, t in start.items()}
        self.settings, self.s2c, self.c2s = settings, s2c, c2s
        # 'client' reading: the global model at each client's last round (x_0 at first).
        self.start = {name: t.clone() for name, t in start.items()}
        self.synced = {}
        # 'round' reading: the messages no client has applied yet (log[i] is message
        # number dropped + i), and how many messages each client has applied.
        self.log, self.dropped, self.applied = [], 0, {}
        self._sum, self._weight = None, 0.0

    def messages_for(self, cid, round_):
        """[(round, message)] client ``cid`` needs at ``round_``, and the encode seconds
        spent on them here."""
        if self.settings.s2c_update == "round":
            missed = self.log[self.applied.get(cid, 0) - self.dropped:]
            self.applied[cid] = self.dropped + len(self.log)
            self._drop_applied()
            return missed, 0.0
        reference = self.synced.get(cid, self.start)
        update = {name: self.model[name] - reference[name] for name in self.model}
        self.synced[cid] = {name: t.clone() for name, t in self.model.items()}
        message, seconds = self.s2c.encode(update, f"to{cid}", wire.S2C, round_, wire.SERVER)
        return [(round_, message)], seconds

    def _drop_applied(self):
        """Forget the messages every client has applied (a client never sampled has
        applied none, so nothing is dropped before each one has had a round)."""
        oldest = min(self.applied.get(k, 0) for k in range(self.settings.clients))
        del self.log[:oldest - self.dropped]
        self.dropped = max(self.dropped, oldest)

    def receive(self, cid, message, round_, examples):
        """Decode one client's update and add it to the round's weighted sum; seconds."""
        sender, update, seconds = self.c2s.decode(message, self.shapes, wire.C2S, round_)
        if sender != cid:
            raise FrameError(f"server: client {cid}'s message of round {round_} says sender {sender}")
        weight = float(examples) if self.settings.weighting == "samples" else 1.0
        if self._sum is None:
            self._sum = {name: torch.zeros_like(t) for name, t in self.model.items()}
        for name, delta in update.items():
            self._sum[name].add_(delta, alpha=weight)
        self._weight += weight
        return seconds

    def finish(self, round_):
        """Apply the round's average; under the 'round' reading encode the change once for
        the next round's clients. Returns the encode seconds spent."""
        before = {name: t.clone() for name, t in self.model.items()} if self.settings.s2c_update == "round" else None
        scale = self.settings.server_lr / self._weight
        for name, total in self._sum.items():
            self.model[name].add_(total, alpha=scale)
        self._sum, self._weight = None, 0.0
        if before is None:
            return 0.0
        update = {name: self.model[name] - before[name] for name in self.model}
        message, seconds = self.s2c.encode(update, "all", wire.S2C, round_ + 1, wire.SERVER)
        self.log.append((round_ + 1, message))
        return seconds


@dataclass
class RoundRecord:
    """What one round cost and reached. Times are seconds on this machine; bytes are the
    messages' (envelope and frames). Lists hold one entry per sampled client or message."""
    round: int
    clients: list
    client_decode: list
    client_encode: list
    server_decode: list
    server_encode: list
    s2c_bytes: list
    c2s_bytes: list
    train_seconds: list
    wall_seconds: float
    metric: float = None
    test_loss: float = None


@dataclass
class FLRun:
    """A finished run: its settings, the dense size of one model update, and its rounds."""
    label: str
    settings: Settings
    dense_bytes: int
    rounds: list
    metric_name: str
    mode: str = "simulated"

    @property
    def final_metric(self):
        return next(r.metric for r in reversed(self.rounds) if r.metric is not None)


def build_parties(settings, task, hosted=None):
    """(server, clients, model, start state) for a run; ``hosted``: the client ids this
    process holds (None: all of them; the others are left None)."""
    model = task.model()
    start = model_state(model)
    server = Server(start, settings, Direction(settings.s2c, settings.s2c_ef, settings.compress_1d, "s2c"),
                    Direction(settings.c2s, False, settings.compress_1d, "c2s"))
    c2s = Direction(settings.c2s, settings.c2s_ef, settings.compress_1d, "c2s")
    s2c = Direction(settings.s2c, False, settings.compress_1d, "s2c")
    clients = [Client(k, shard, start, task, settings, c2s, s2c) if hosted is None or k in hosted else None
               for k, shard in enumerate(task.shards)]
    return server, clients, model, start


class Round:
    """The server's side of one round, the same whether the clients run in this process
    (``simulate``) or in others (``deepreduce.fl.procs``): the S2C messages leave and the
    C2S updates arrive through it, and ``close`` applies the round's average and
    completes its RoundRecord. The round's wall time runs from the first message made."""

    def __init__(self, settings, server, round_):
        self.settings, self.server = settings, server
        self.began = time.perf_counter()
        self.record = RoundRecord(round_, sample_clients(settings, round_), [], [], [], [], [], [], [], 0.0)

    def messages_for(self, cid):
        """[(round, message)] for client ``cid``, counted in the record."""
        messages, seconds = self.server.messages_for(cid, self.record.round)
        if messages and self.settings.s2c_update == "client":
            self.record.server_encode.append(seconds)
        self.record.s2c_bytes.append(sum(m.nbytes for _, m in messages))
        return messages

    def receive(self, cid, message, examples):
        """Client ``cid``'s update (it trained on ``examples`` examples) into the average."""
        self.record.c2s_bytes.append(message.nbytes)
        self.record.server_decode.append(self.server.receive(cid, message, self.record.round, examples))

    def close(self, task, model):
        """Apply the round's average, stop its clock, evaluate when due; the record."""
        rec = self.record
        seconds = self.server.finish(rec.round)
        if self.settings.s2c_update == "round":
            rec.server_encode.append(seconds)
        rec.wall_seconds = time.perf_counter() - self.began
        if rec.round % self.settings.eval_every == 0 or rec.round == self.settings.rounds:
            rec.metric, rec.test_loss = task.evaluate(model, self.server.model)
        return rec


def dense_bytes(start):
    """The bytes of one uncompressed update of the model whose state is ``start``."""
    return 4 * sum(t.numel() for t in start.values())


def simulate(settings, label="run", progress=None):
    """Run every client in this process; returns an FLRun. ``progress(record)`` is called
    after each round."""
    task = build_task(settings)
    server, clients, model, start = build_parties(settings, task)
    records = []
    for round_ in range(1, settings.rounds + 1):
        current = Round(settings, server, round_)
        for cid in current.record.clients:
            client = clients[cid]
            current.record.client_decode.append(client.receive(current.messages_for(cid)))
            message, encode_seconds, train_seconds = client.train(model, round_)
            current.record.client_encode.append(encode_seconds)
            current.record.train_seconds.append(train_seconds)
            current.receive(cid, message, client.examples)
        records.append(current.close(task, model))
        if progress is not None:
            progress(records[-1])
    return FLRun(label, settings, dense_bytes(start), records, task.metric_name)
