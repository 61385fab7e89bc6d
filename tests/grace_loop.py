"""A training script written for GRACE, used by the tests as GRACE users write it: imports
from grace_dl, a loop over named_parameters calling grc.step. It trains a small MLP on a
fixed synthetic classification task with every rank on its own shard."""
import torch
import torch.nn.functional as F

from grace_dl.dist.helper import grace_from_params


def synthetic_task(seed=0, n=512, features=20, classes=4):
    gen = torch.Generator().manual_seed(seed)
    centers = torch.randn(classes, features, generator=gen) * 2
    labels = torch.randint(0, classes, (n,), generator=gen)
    inputs = centers[labels] + torch.randn(n, features, generator=gen)
    return inputs, labels


def train(rank, world_size, params, steps=30, batch=32):
    torch.manual_seed(0)  # same initial model on every rank
    model = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    grc = grace_from_params(params)
    inputs, labels = synthetic_task()
    shard = torch.arange(rank, inputs.shape[0], world_size)
    losses = []
    for step in range(steps):
        idx = shard[(step * batch) % shard.numel():][:batch]
        optimizer.zero_grad()
        loss = F.cross_entropy(model(inputs[idx]), labels[idx])
        loss.backward()
        for name, p in model.named_parameters():
            p.grad.copy_(grc.step(p.grad, name))
        optimizer.step()
        with torch.no_grad():
            losses.append(F.cross_entropy(model(inputs), labels).item())
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return flat.numpy(), losses
