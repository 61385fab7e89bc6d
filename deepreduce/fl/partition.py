"""How a labelled training set is split among federated clients: IID, or non-IID by
Dirichlet(alpha) over the labels (the "LDA" split of FedML and the DeepReduce paper)."""
import numpy as np

from ..checks import number


def iid_partition(n, clients, seed):
    """Index arrays of a seeded shuffle of range(n) cut into ``clients`` near-equal parts."""
    _check(n, clients)
    perm = np.random.default_rng(seed).permutation(n)
    return [np.sort(part) for part in np.array_split(perm, clients)]


def dirichlet_partition(labels, clients, alpha, seed, min_size=1):
    """Index arrays, one per client: for every class, its examples are dealt to the clients
    in proportions drawn from Dirichlet(alpha, ..., alpha) (small alpha: each client sees
    few classes; large alpha: near IID). Draws are repeated until every client holds at
    least ``min_size`` examples, as FedML does; a split that cannot satisfy it in 1000
    draws raises ValueError."""
    labels = np.asarray(labels)
    _check(labels.size, clients)
    number(alpha, "alpha (small: non-IID, large: near IID)", 0, low_open=True)
    if min_size * clients > labels.size:
        raise ValueError(f"{clients} clients of at least {min_size} examples need {min_size * clients}; "
                         f"the training set has {labels.size}")
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    for _ in range(1000):
        parts = [[] for _ in range(clients)]
        for c in classes:
            members = rng.permutation(np.flatnonzero(labels == c))
            shares = rng.dirichlet(np.full(clients, float(alpha)))
            cuts = (np.cumsum(shares)[:-1] * members.size).astype(int)
            for part, piece in zip(parts, np.split(members, cuts)):
                part.append(piece)
        parts = [np.sort(np.concatenate(p)) for p in parts]
        if min(p.size for p in parts) >= min_size:
            return parts
    raise ValueError(f"no Dirichlet(alpha={alpha}) split of {labels.size} examples gives each of {clients} "
                     f"clients {min_size}; raise alpha or lower the number of clients")


def _check(n, clients):
    if not isinstance(clients, (int, np.integer)) or clients < 1:
        raise ValueError(f"clients={clients!r} must be a positive integer")
    if clients > n:
        raise ValueError(f"{clients} clients but only {n} training examples: each client needs one")
