"""The same server and clients in real processes over gloo: rank 0 is the server, ranks
1..P-1 host the clients (client k on rank 1 + k mod (P-1)), and every message crosses
torch.distributed point to point (a length, then the message bytes). Every process
derives the same data, model, sampling and shuffles from the seed, so a process run
trains exactly as ``simulate`` does; the round's wall time is measured on the server,
from its first S2C send to the end of aggregation. Run inside benchmarks/limited_link.py's
namespace, every message crosses a real ``tc tbf`` link."""
import os
import pickle
import tempfile

import numpy as np
import torch
import torch.distributed as dist

from .fedavg import FLRun, Round, build_parties, dense_bytes, sample_clients
from .settings import Settings
from .tasks import build_task


def host(cid, world_size):
    return 1 + cid % (world_size - 1)


def _send(message, peer):
    """Post a message (uint8 NumPy array) to ``peer``; returns the pending requests."""
    length = torch.tensor([message.nbytes], dtype=torch.int64)
    return [dist.isend(length, peer), dist.isend(torch.from_numpy(message), peer)]


def _recv(peer):
    length = torch.empty(1, dtype=torch.int64)
    dist.recv(length, peer)
    data = torch.empty(int(length.item()), dtype=torch.uint8)
    dist.recv(data, peer)
    return data.numpy()


def _serve(settings, task, server, model, world_size):
    records = []
    for round_ in range(1, settings.rounds + 1):
        current = Round(settings, server, round_)
        pending = []
        for cid in current.record.clients:
            messages = current.messages_for(cid)
            peer = host(cid, world_size)
            pending += _send(np.array([len(messages)] + [r for r, _ in messages], dtype=np.int64).view(np.uint8), peer)
            for _, message in messages:
                pending += _send(message, peer)
        for cid in current.record.clients:
            current.receive(cid, _recv(host(cid, world_size)), len(task.shards[cid][0]))
        for request in pending:  # done already: each client replied after it had them all
            request.wait()
        records.append(current.close(task, model))
    return records


def _work(settings, clients, model, rank, world_size):
    """The client side: per round and hosted sampled client, receive, train, send back.
    Returns {(round, client): (decode s, encode s, train s)}."""
    out = {}
    for round_ in range(1, settings.rounds + 1):
        for cid in sample_clients(settings, round_):
            if host(cid, world_size) != rank:
                continue
            header = _recv(0).view(np.int64)
            messages = [(int(r), _recv(0)) for r in header[1:1 + int(header[0])]]
            decode_seconds = clients[cid].receive(messages)
            message, encode_seconds, train_seconds = clients[cid].train(model, round_)
            for request in _send(message, 0):
                request.wait()
            out[round_, cid] = (decode_seconds, encode_seconds, train_seconds)
    return out


def _worker(rank, world_size, settings, label, path):
    torch.set_num_threads(1)
    task = build_task(settings)
    hosted = {k for k in range(settings.clients) if host(k, world_size) == rank}  # none on the server
    server, clients, model, start = build_parties(settings, task, hosted)
    if rank == 0:
        records = _serve(settings, task, server, model, world_size)
        gathered = [None] * world_size
        dist.gather_object({}, gathered, dst=0)
        for rec in records:
            for cid in rec.clients:
                decode, encode, train = next(g[rec.round, cid] for g in gathered if (rec.round, cid) in g)
                rec.client_decode.append(decode)
                rec.client_encode.append(encode)
                rec.train_seconds.append(train)
        with open(path, "wb") as f:
            pickle.dump(FLRun(label, settings, dense_bytes(start), records, task.metric_name,
                              mode=f"{world_size} gloo processes"), f)
    else:
        dist.gather_object(_work(settings, clients, model, rank, world_size), None, dst=0)


def run_processes(settings: Settings, processes, label="run"):
    """Run ``settings`` on ``processes`` spawned gloo processes (a server and at least one
    client host); returns the FLRun."""
    if processes < 2:
        raise ValueError(f"processes={processes}: a process run needs the server and at least one client host")
    from ..train.launch import spawn
    fd, path = tempfile.mkstemp(prefix="deepreduce-fl-", suffix=".pkl")
    os.close(fd)
    try:
        spawn(_worker, processes, (settings, label, path))
        with open(path, "rb") as f:
            return pickle.load(f)
    finally:
        os.unlink(path)
