"""Federated mode (docs/federated.md): FedAvg with two-way compression."""
import dataclasses

import numpy as np
import pytest
import torch

import deepreduce.fl as fl
from deepreduce.cli import build_parser, main
from deepreduce.errors import FrameError
from deepreduce.fl import wire
from deepreduce.fl.direction import Direction
from deepreduce.fl.fedavg import build_parties, sample_clients, simulate
from deepreduce.fl.models import PAPER_LSTM_PARAMETERS, MobileNetSmall, NextWordLSTM
from deepreduce.fl.partition import dirichlet_partition, iid_partition
from deepreduce.fl.settings import Settings
from deepreduce.fl.table import PAPER_ROWS, PAPER_VOLUMES, TOPR
from deepreduce.fl.tasks import build_task

DR_QSGD_BF = PAPER_ROWS["DR(QSGD, BF-P0)"]
OURS = PAPER_ROWS["ours: DR(QSGD, rice)"]


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # clients run one after the other: one thread is far faster on 2 cores
    yield
    torch.set_num_threads(threads)


def test_the_lstm_has_the_papers_layout():
    model = NextWordLSTM()
    assert sum(p.numel() for p in model.parameters()) == PAPER_LSTM_PARAMETERS == 4_053_428
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    assert shapes["embedding.weight"] == (10004, 96) and shapes["lstm.weight_hh_l0"] == (2680, 670)
    assert model(torch.zeros(2, 20, dtype=torch.long)).shape == (2, 20, 10004)
    assert MobileNetSmall()(torch.zeros(2, 1, 8, 8)).shape == (2, 10)


def test_partitions_cover_the_set_once():
    labels = np.repeat(np.arange(10), 50)
    for parts in (iid_partition(500, 8, 0), dirichlet_partition(labels, 8, 0.3, 0, min_size=5)):
        joined = np.concatenate(parts)
        assert sorted(joined.tolist()) == list(range(500)) and min(p.size for p in parts) >= 5
    # Small alpha concentrates each client on few labels; a large one spreads them like IID.
    def dominant(alpha):
        parts = dirichlet_partition(labels, 8, alpha, 1)
        return np.mean([np.bincount(labels[p], minlength=10).max() / p.size for p in parts])
    assert dominant(0.05) > 0.5 > 0.2 > dominant(1000.0)
    with pytest.raises(ValueError, match="alpha"):
        dirichlet_partition(labels, 8, 0.0, 0)
    with pytest.raises(ValueError, match="9 clients"):
        iid_partition(8, 9, 0)


def _update():
    g = torch.Generator().manual_seed(0)
    return {"w": torch.randn(40, 100, generator=g), "b": torch.randn(40, generator=g)}


def test_a_message_round_trips_and_refuses_damage():
    update = _update()
    shapes = {k: v.shape for k, v in update.items()}
    sender, receiver = Direction(OURS, True), Direction(OURS, False)
    message, _ = sender.encode(update, "client3", wire.C2S, 5, 3)
    who, decoded, _ = receiver.decode(message, shapes, wire.C2S, 5)
    assert who == 3
    assert torch.equal(decoded["b"], update["b"])  # one dimension: dense, exact
    kept = (decoded["w"] != 0).sum().item()
    assert kept == 400  # top-10% of 4000
    # Every single flipped byte, and any truncation, is refused with a FrameError.
    for i in range(0, message.nbytes, max(1, message.nbytes // 97)):
        bad = message.copy()
        bad[i] ^= 0x41
        with pytest.raises(FrameError):
            receiver.decode(bad, shapes, wire.C2S, 5)
    for cut in (0, 10, message.nbytes - 1):
        with pytest.raises(FrameError):
            receiver.decode(message[:cut], shapes, wire.C2S, 5)
    with pytest.raises(FrameError, match="round 4"):
        receiver.decode(message, shapes, wire.C2S, 4)
    with pytest.raises(FrameError, match="server-to-client"):
        receiver.decode(message, shapes, wire.S2C, 5)
    with pytest.raises(FrameError, match="3 tensors"):
        receiver.decode(message, dict(shapes, extra=(3,)), wire.C2S, 5)
    # A message of another configuration is refused by the frame check, not misread.
    with pytest.raises(FrameError):
        Direction(DR_QSGD_BF, False).decode(message, shapes, wire.C2S, 5)


def test_error_feedback_is_switchable_per_direction():
    update = _update()
    shapes = {k: v.shape for k, v in update.items()}
    on, off, receiver = Direction(TOPR, True), Direction(TOPR, False), Direction(TOPR, False)
    sums = {}
    for name, direction in (("on", on), ("off", off)):
        total = torch.zeros(40, 100)
        for round_ in range(1, 11):
            message, _ = direction.encode(update, "c", wire.C2S, round_, 0)
            total += receiver.decode(message, shapes, wire.C2S, round_)[1]["w"]
        sums[name] = total
    # With error feedback, ten rounds of the same update deliver close to ten of them;
    # without it, the same top-10% ten times.
    target = 10 * update["w"]
    assert (sums["on"] - target).norm() < 0.5 * (sums["off"] - target).norm()
    assert on.error_feedback and not off.error_feedback
    assert Direction(dict(TOPR, memory="none")).error_feedback is False  # None: the params dict decides


def test_unusable_params_fail_before_any_round():
    with pytest.raises(ValueError, match="one frame per tensor"):
        Settings(c2s={"compressor": "powersgd"})
    with pytest.raises(ValueError, match="s2c_update"):
        Settings(s2c_update="sometimes")
    with pytest.raises(ValueError, match="per_round"):
        Settings(clients=4, per_round=5)
    # Accepted, then NumPy's TypeError in the first round's sampling (or a True client).
    for key, bad in (("per_round", 2.5), ("per_round", True), ("clients", True), ("rounds", 2.0)):
        with pytest.raises(ValueError, match=f"{key}={bad!r} must be a"):
            Settings(**{key: bad})
    for bad in ("2", 2.5, 1, -1):
        with pytest.raises(ValueError, match=f"processes={bad!r} must be an integer"):
            fl.run(TOPR, processes=bad, progress=lambda record: pytest.fail("a round ran"))
    with pytest.raises(ValueError, match="server_lr must be a finite number > 0, got 0"):
        Settings(server_lr=0)
    with pytest.raises(ValueError, match=r"alpha \(or None for an IID split\) must be a finite number > 0"):
        Settings(alpha=0.0)
    with pytest.raises(TypeError, match="lr must be a number, got '0.1'"):
        Settings(lr="0.1")
    with pytest.raises(TypeError, match="c2s_ef must be True or False, got 'no'"):  # 'no' was true
        Settings(c2s=TOPR, c2s_ef="no")
    with pytest.raises(TypeError, match="compress_1d must be True or False, got 'false'"):
        Settings(compress_1d="false")
    with pytest.raises(TypeError, match="unknown settings: round"):
        fl.run(TOPR, round=3)
    with pytest.raises(TypeError, match="baseline must be True or False, got 'no'"):  # 'no' ran it
        fl.run(TOPR, baseline="no")
    with pytest.raises(ValueError, match="cannot make that folder"):  # was found after every round
        fl.run(TOPR, out=__file__, progress=lambda record: pytest.fail("a round ran before out was made"))
    with pytest.raises(ValueError, match="one frame per tensor"):  # the second run's, before the first runs
        fl.run({"fine": TOPR, "unusable": {"compressor": "powersgd"}}, model="cnn", clients=2, rounds=1,
               progress=lambda record: pytest.fail("a round ran before every run's settings were checked"))
    # Accepted, then torch.manual_seed's "Overflow when unpacking long long" in the first round.
    with pytest.raises(ValueError, match=r"seed=18446744073709551616 must be an integer in \[0, 2\*\*63\)"):
        Settings(seed=2 ** 64)
    # A label of something else than a params dict ran the whole dict as one params dict
    # (dense, unknown keys ignored); a pair's side that is not a dict said nothing of it.
    with pytest.raises(TypeError, match=r"runs\['typo'\] is 3, not a params dict"):
        fl.run({"topk": TOPR, "typo": 3}, progress=lambda record: pytest.fail("a round ran"))
    with pytest.raises(TypeError, match="s2c must be a params dict, got None"):
        fl.run({"c2s": TOPR, "s2c": None}, progress=lambda record: pytest.fail("a round ran"))


def test_batch_size_one_trains():
    """Every batch of one was skipped (batch norm's lone last example): client updates were
    0 and the accuracy never moved, unsaid."""
    settings = Settings(model="cnn", clients=2, rounds=1, batch_size=1, alpha=None)
    task = build_task(settings)
    model = task.model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    after = task.train(model, task.shards[0], settings, 1, 0)
    assert max((after[k].float() - before[k].float()).abs().max().item() for k in before) > 0.1


def test_settings_are_checked_once_where_they_are_made(monkeypatch):
    """Made (checked) once: a run, simulated or spawned, takes them as they are, and they
    cannot change after the check."""
    made = []
    check = Settings.__post_init__
    monkeypatch.setattr(Settings, "__post_init__", lambda self: made.append(check(self)))
    settings = Settings(model="cnn", clients=2, rounds=1, c2s=TOPR, s2c=TOPR)
    simulate(settings)
    assert len(made) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.rounds = 0


@pytest.mark.slow
def test_relative_volumes_on_the_lstm_layout_match_the_paper():
    """One message per configuration of a real client update of the 4,053,428-parameter
    LSTM (a local epoch on the generated corpus): within 5% of Tables 2/4, and ours at
    most 0.9x DR(QSGD, BF-P0)."""
    from deepreduce.fl.volumes import lstm_update, relative_volumes
    update = lstm_update(sentences=32)
    rows = {k: PAPER_ROWS[k] for k in list(PAPER_VOLUMES) + ["ours: DR(QSGD, rice)"]}
    volumes = relative_volumes(dict(rows, **{"top-k frame": TOPR}), update)
    for label, paper in PAPER_VOLUMES.items():
        assert abs(volumes[label][0] / paper - 1) <= 0.05, (label, volumes[label][0], paper)
    assert volumes["ours: DR(QSGD, rice)"][0] <= 0.9 * volumes["DR(QSGD, BF-P0)"][0]
    # Our plain top-k frame at 10% is a bitmap and the values (select.h): below the
    # paper's top-r (index lists) and below its Bloom-filter index, DR(∅, BF-P0).
    assert volumes["top-k frame"][0] < 0.7 * PAPER_VOLUMES["top-r 10%"]
    assert volumes["top-k frame"][0] < volumes["DR(∅, BF-P0)"][0]


MARGIN = 0.03  # accuracy points a compressed run may trail uncompressed FedAvg by


@pytest.mark.slow
def test_eight_clients_reach_fedavg_accuracy_with_two_way_compression():
    """8 clients, non-IID Dirichlet(0.5) digits, MobileNet-style CNN, 20 rounds: top-r 10%
    with DeepReduce both ways (error feedback at clients and server) ends within MARGIN of
    dense FedAvg, and sends a fraction of its bytes."""
    results = fl.run({"DR(QSGD, BF-P0)": DR_QSGD_BF, "ours": OURS}, clients=8, rounds=20, alpha=0.5,
                     c2s_ef=True, s2c_ef=True, eval_every=20)
    base = results[0]
    assert base.label == "baseline" and base.final_metric > 0.9
    for run, row in zip(results[1:], results.rows()[1:]):
        assert run.final_metric >= base.final_metric - MARGIN, (run.label, run.final_metric, base.final_metric)
        assert row.c2s_volume < 0.35 and row.s2c_volume < 0.35


@pytest.mark.slow
def test_gloo_processes_train_exactly_as_the_simulation():
    """A server and two client hosts over gloo give the simulation's bytes and accuracy,
    under both readings of the server's update and with client sampling. (The codecs are
    deterministic here: QSGD's stochastic rounding draws a stream per rank, so a client
    rounds differently on rank 1 than in the simulation's rank 0.)"""
    rice = dict(TOPR, deepreduce="index", index="rice")
    for reading in ("client", "round"):
        kwargs = dict(model="cnn", clients=8, per_round=5, rounds=3, s2c_update=reading, c2s_ef=True, s2c_ef=True)
        simulated, = fl.run({"dr": rice}, baseline=False, **kwargs)
        spawned, = fl.run({"dr": rice}, baseline=False, processes=3, **kwargs)
        assert spawned.mode == "3 gloo processes"
        for a, b in zip(simulated.rounds, spawned.rounds):
            assert (a.clients, a.s2c_bytes, a.c2s_bytes) == (b.clients, b.s2c_bytes, b.c2s_bytes)
            assert a.metric == b.metric


def test_the_round_reading_sends_missed_rounds():
    settings = Settings(model="cnn", clients=8, per_round=3, rounds=4, s2c_update="round", c2s=TOPR, s2c=TOPR,
                        s2c_ef=True, c2s_ef=True)
    run = simulate(settings)
    assert run.rounds[0].s2c_bytes == [0, 0, 0]  # clients hold x_0: nothing to send in round 1
    seen = {}
    for rec in run.rounds:
        for cid, nbytes in zip(rec.clients, rec.s2c_bytes):
            missed = rec.round - 1 - seen.get(cid, 0)
            assert (nbytes > 0) == (missed > 0)
            seen[cid] = rec.round - 1
    one = next(b for rec in run.rounds for b in rec.s2c_bytes if b)
    assert max(b for rec in run.rounds for b in rec.s2c_bytes) > one  # a catch-up of several messages


def test_the_command_explains_itself_and_refuses_bad_input(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["fl", "--help"])
    out = capsys.readouterr().out
    for text in ("--s2c-update", "--c2s-ef", "--no-s2c-ef", "Dirichlet", "--processes", "examples:", "lstm"):
        assert text in out
    for argv, message in ((["--params", '{"compressor": "nope"}'], "unknown compressor 'nope'"),
                          (["--alpha", "-1"], "--alpha must be > 0"),
                          (["--c2s", "[1]"], "must be a JSON object"),
                          (["--s2c", "/no/such/s2c.json"], "argument --s2c: '/no/such/s2c.json': no such file"),
                          (["--clients", "4", "--per-round", "5"], "per_round=5"),
                          (["--seed", "-1"], "seed=-1 must be an integer in [0, 2**63)"),
                          (["--threads", "-1"], "threads=-1 must be an integer >= 1, or 0"),
                          (["--c2s", '{"compressor": "topk", "compress_ratio": "0.1"}'],  # a traceback before
                           "compress_ratio must be a number, got '0.1'")):
        with pytest.raises(SystemExit) as exit_:
            main(["fl", *argv])
        assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_the_command_takes_a_params_file_as_deepreduce_train_does(tmp_path):
    import argparse

    from deepreduce.fl.cli import add_arguments
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    (tmp_path / "topr.json").write_text('{"compressor": "topk", "compress_ratio": 0.1}')
    args = parser.parse_args(["--c2s", str(tmp_path / "topr.json")])
    assert args.c2s == {"compressor": "topk", "compress_ratio": 0.1}


def test_the_command_prints_the_table(tmp_path, capsys):
    assert main(["fl", "--model", "cnn", "--clients", "8", "--rounds", "2", "--params",
                 '{"compressor": "topk", "compress_ratio": 0.1}', "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for text in ("CLI dec", "S2C vol", "100 Mbit/s", "1 Gbit/s", "baseline", "compressed", "time model"):
        assert text in out
    assert (tmp_path / "log.json").is_file() and (tmp_path / "plot.png").is_file()


def test_the_round_reading_forgets_what_every_client_applied():
    settings = Settings(model="cnn", clients=3, rounds=4, s2c_update="round", c2s=TOPR, s2c=TOPR, s2c_ef=True)
    task = build_task(settings)
    server, clients, model, _ = build_parties(settings, task)
    for round_ in range(1, 5):
        for cid in sample_clients(settings, round_):
            clients[cid].receive(server.messages_for(cid, round_)[0])
            message = clients[cid].train(model, round_)[0]
            server.receive(cid, message, round_, clients[cid].examples)
        # Every client has applied every message: they hold one model, and the server keeps
        # no message but the one it just made for the next round.
        assert all(torch.equal(clients[0].copy[k], c.copy[k]) for c in clients[1:] for k in c.copy)
        server.finish(round_)
        assert len(server.log) == 1


def test_the_client_reading_keeps_copy_plus_residual_equal_to_the_model():
    settings = Settings(model="cnn", clients=4, per_round=2, rounds=3, c2s=TOPR, s2c=OURS, s2c_ef=True)
    task = build_task(settings)
    server, clients, model, _ = build_parties(settings, task)
    residuals = server.s2c.memory.residuals
    for round_ in range(1, 4):
        for cid in sample_clients(settings, round_):
            clients[cid].receive(server.messages_for(cid, round_)[0])
            for name, held in clients[cid].copy.items():
                key = f"to{cid}/{name}"
                rebuilt = held + residuals[key] if key in residuals else held  # 1-D tensors travel exact
                assert torch.allclose(rebuilt, server.model[name], atol=1e-6), (round_, cid, name)
            server.receive(cid, clients[cid].train(model, round_)[0], round_, clients[cid].examples)
        server.finish(round_)


def test_a_message_from_another_sender_is_refused():
    settings = Settings(model="cnn", clients=2, rounds=1, c2s=TOPR, s2c=TOPR)
    task = build_task(settings)
    server, clients, model, _ = build_parties(settings, task)
    message = clients[0].train(model, 1)[0]
    with pytest.raises(FrameError, match="client 1's message of round 1 says sender 0"):
        server.receive(1, message, 1, clients[1].examples)


def test_a_c2s_s2c_pair_is_one_run_and_no_params_run_the_baseline_alone():
    results = fl.run({"c2s": TOPR, "s2c": OURS}, baseline=False, model="cnn", clients=2, rounds=1)
    assert [r.label for r in results] == ["compressed"]
    assert results[0].settings.c2s == TOPR and results[0].settings.s2c == OURS
    from deepreduce.fl.cli import runs_from_args
    parser = build_parser()
    assert runs_from_args(parser.parse_args(["fl"])) == {"baseline": {"compressor": "none"}}
    with pytest.raises(ValueError, match="nothing to run"):
        runs_from_args(parser.parse_args(["fl", "--no-baseline"]))


def test_run_gives_the_caller_its_thread_count_back():
    """``threads=1`` (the default) set torch's thread count for the rest of the caller's
    process: a notebook trained on one thread after it."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        fl.run(TOPR, model="cnn", clients=2, rounds=1, threads=1, baseline=False)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
