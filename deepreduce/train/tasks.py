"""Loss and evaluation per kind of data set, so the loop does not branch on the task.

``evaluate`` returns sums (score, loss, count) over a shard of the test set; the loop adds them
up across ranks, so the metric is exact whatever the sharding.
"""
import torch
import torch.nn.functional as F

# Hit rate at this cut-off for ranking tasks (NCF's HR@10).
HIT_AT = 10


class Classify:
    metric = "accuracy"

    @staticmethod
    def loss(model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)

    @staticmethod
    @torch.no_grad()
    def evaluate(model, batch):
        x, y = batch
        logits = model(x)
        return ((logits.argmax(1) == y).sum().item(),
                F.cross_entropy(logits, y, reduction="sum").item(), len(y))


class Rank:
    """Implicit-feedback recommendation: binary cross-entropy on (user, item, label) for
    training; hit rate at HIT_AT of the held-out item among its candidates for testing."""
    metric = "hit_rate@%d" % HIT_AT

    @staticmethod
    def loss(model, batch):
        users, items, labels = batch
        return F.binary_cross_entropy_with_logits(model(users, items), labels)

    @staticmethod
    @torch.no_grad()
    def evaluate(model, batch):
        users, candidates = batch
        n, c = candidates.shape
        scores = model(users.repeat_interleave(c), candidates.reshape(-1)).view(n, c)
        # Ties count against the held-out item (column 0), so a constant model scores 0,
        # not 1.
        rank = (scores[:, 1:] >= scores[:, :1]).sum(1)
        labels = torch.zeros_like(scores)
        labels[:, 0] = 1.0
        loss = F.binary_cross_entropy_with_logits(scores, labels, reduction="sum") / c
        return (rank < HIT_AT).sum().item(), loss.item(), n


TASKS = {"classify": Classify, "rank": Rank}
