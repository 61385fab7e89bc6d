import json
import re
import subprocess
import sys

import pytest

from deepreduce.cli import build_parser, main
from deepreduce.train.config import DEFAULT_PARAMS, DENSE_PARAMS
from deepreduce.train.options import build_params, config_from_args


def parse(*argv):
    return build_parser().parse_args(["train", *argv])


def test_help_explains_flags_defaults_and_examples():
    out = subprocess.run([sys.executable, "-m", "deepreduce", "train", "--help"],
                         capture_output=True, text=True, check=True).stdout
    for text in ("--compress-ratio", "--no-baseline", "--data-dir", "--workers", "(default: 2)",
                 '"compressor": "topk"', "examples:", "torchrun", "mpirun", "resnet20"):
        assert text in out


def test_defaults():
    cfg = config_from_args(parse(), "spawn")
    assert cfg.runs == [("compressed", DEFAULT_PARAMS), ("dense", DENSE_PARAMS)]
    assert (cfg.dataset, cfg.model, cfg.epochs, cfg.batch_size) == ("digits", "cnn", 20, 32)
    assert cfg.out.startswith("runs")
    cifar = config_from_args(parse("--dataset", "cifar10", "--epochs", "3"), "spawn")
    assert (cifar.model, cifar.epochs, cifar.lr_decay) == ("resnet20", 3, "step")


@pytest.mark.parametrize("epochs, rates", [(1, [1]), (2, [1, 0.1]), (3, [1, 1, 0.1]), (4, [1, 1, 0.1, 0.01]),
                                           (10, [1] * 5 + [0.1] * 3 + [0.01] * 2)])
def test_step_decay_starts_every_run_at_the_full_lr(epochs, rates):
    """x0.1 after 50% and after 75% of the epochs: a 1-epoch run trained at 0.01 lr
    throughout (its milestones were epochs // 2 = 0), and a 2-epoch run skipped x0.1."""
    torch = pytest.importorskip("torch")
    from deepreduce.train.loop import make_schedule
    cfg = config_from_args(parse("--epochs", str(epochs), "--lr-decay", "step"), "spawn")
    optimizer = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=1.0)
    schedule, seen = make_schedule(cfg, optimizer), []
    for _ in range(epochs):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    assert seen == pytest.approx(rates)


def test_params_are_layered():
    args = parse("--params", '{"compressor": "qsgd", "quantum_num": 64}', "--memory", "none",
                 "--deepreduce", "index", "--param", "fpr=0.001", "--param", "policy=p0",
                 "--param", "quantum_num=127", "--no-baseline")
    assert build_params(args) == {"compressor": "qsgd", "quantum_num": 127, "memory": "none",
                                  "deepreduce": "index", "fpr": 0.001, "policy": "p0"}
    assert [label for label, _ in config_from_args(args, "spawn").runs] == ["compressed"]
    # Flags alone refine the default dict rather than replacing it.
    assert build_params(parse("--compress-ratio", "0.05")) == dict(DEFAULT_PARAMS,
                                                                   compress_ratio=0.05)


def test_params_from_file(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"compressor": "fp16", "communicator": "allreduce"}))
    assert build_params(parse("--params", str(path))) == {"compressor": "fp16",
                                                         "communicator": "allreduce"}


def test_hidden_widths_for_the_mlp():
    cfg = config_from_args(parse("--model", "mlp", "--hidden", "512,256"), "spawn")
    assert cfg.hidden == (512, 256)
    assert config_from_args(parse(), "spawn").hidden is None
    with pytest.raises(ValueError, match="add --model mlp"):
        config_from_args(parse("--hidden", "64"), "spawn")


@pytest.mark.parametrize("argv,message", [
    (["--hidden", "64,0"], "--hidden expects positive integers"),
    (["--hidden", "wide"], "--hidden expects positive integers"),
    (["--params", "{not json"], "argument --params: neither a JSON object nor a JSON file"),
    (["--params", "/no/such/params.json"], "argument --params: '/no/such/params.json': no such file"),
    (["--params", "[1, 2]"], "argument --params: a params dict must be a JSON object"),
    (["--param", "novalue"], "--param expects key=value"),
])
def test_bad_params_are_argument_errors(argv, message, capsys):
    with pytest.raises(SystemExit):
        parse(*argv)
    assert message in capsys.readouterr().err


def test_param_values_take_pythons_true_false_and_none_as_a_grace_script_writes_them():
    assert dict(parse("--param", "gradient_clipping=True", "--param", "bandwidth=None", "--param",
                      "auto_off=false", "--param", "policy=p0").param) == \
        {"gradient_clipping": True, "bandwidth": None, "auto_off": False, "policy": "p0"}


def test_param_values_take_numbers_as_python_writes_them_and_no_nan():
    """'.05', '5.' and '0127' were strings (refused: "compress_ratio must be a number");
    NaN was a float that made log.json invalid JSON."""
    assert dict(parse("--param", "compress_ratio=.05", "--param", "lr=5.", "--param", "quantum_num=0127",
                      "--param", "momentum_factor=NaN", "--param", "threshold=inf").param) == \
        {"compress_ratio": 0.05, "lr": 5.0, "quantum_num": 127, "momentum_factor": "NaN", "threshold": "inf"}


def test_params_given_twice_is_an_error(capsys):
    """The second --params replaced the first, unsaid."""
    with pytest.raises(SystemExit):
        parse("--params", '{"compressor": "qsgd"}', "--params", '{"compressor": "randomk"}')
    assert "--params was given twice" in capsys.readouterr().err


@pytest.mark.parametrize("settings, error, message", [
    ({"dataset": "cifar10"}, ValueError, "give the folder that holds them (data_dir="),  # was found in the workers
    ({"workers": "2"}, TypeError, "workers must be a number, got '2'"),
    ({"workers": 0}, ValueError, "workers must be an integer in [1, 1024], got 0")])
def test_the_python_api_refuses_before_any_worker_starts(settings, error, message):
    from deepreduce import train
    with pytest.raises(error, match=re.escape(message)):
        train.run({"compressor": "topk"}, epochs=1, **settings)
    with pytest.raises(TypeError, match=re.escape("runs['typo'] is 3, not a params dict")):
        train.run({"topk": {"compressor": "topk"}, "typo": 3})
    # No dict among the values, and no params key either: it trained one dense run.
    with pytest.raises(TypeError, match=re.escape("runs['a'] is 'topk', not a params dict, and runs is no params")):
        train.run({"a": "topk"})
    with pytest.raises(ValueError, match=re.escape("transport='local' gives each of the 2 workers a world")):
        train.run({"compressor": "topk", "transport": "local"})


@pytest.mark.slow
def test_a_diverged_run_writes_json_with_null_losses(tmp_path):
    """A NaN loss was written as NaN, which is no JSON: other readers refused log.json."""
    assert main(["train", "--epochs", "1", "--lr", "1e6", "--no-progress", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "log.json").read_text()
    log = json.loads(text, parse_constant=lambda constant: pytest.fail(f"{constant} in log.json"))
    assert log["runs"][0]["final"]["test_loss"] is None


def test_bad_values_exit_with_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        main(["train", "--epochs", "0"])
    assert e.value.code == 2 and "--epochs=0 must be a whole number >= 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "--compressor", "nosuch", "--no-progress"])
    assert "nosuch" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--lr", "-1"], "--lr=-1.0 must be a finite number > 0"),
    (["--lr", "nan"], "--lr=nan must be a finite number > 0"),
    (["--momentum", "-0.5"], "--momentum=-0.5 must be a finite number >= 0"),
    (["--weight-decay", "-1"], "--weight-decay=-1.0 must be a finite number >= 0"),
    (["--seed", "-3"], "--seed=-3 must be an integer from 0 to 2**64 - 1"),
    # These trained to a NaN model and exited 0, or failed in every worker unnamed.
    (["--lr", "inf"], "--lr=inf must be a finite number > 0"),
    (["--momentum", "inf"], "--momentum=inf must be a finite number >= 0"),
    (["--weight-decay", "1e400"], "--weight-decay=inf must be a finite number >= 0"),
    (["--seed", str(2**64)], f"--seed={2**64} must be an integer from 0 to 2**64 - 1"),
    # Each worker in a world of its own: they trained alone, and the log looked normal.
    (["--param", "transport=local"], "params' transport='local' gives each of the 2 workers a world of its own: "
                                     "they would train alone"),
    (["--param", "transport=mpi"], "params' transport='mpi' gives each of the 2 workers a world of its own "
                                   "outside mpirun"),
    (["--dataset", "cifar10"], "dataset='cifar10' is read from files: give the folder that holds them (data_dir=, "
                               "or --data-dir on the command line)"),
    (["--dataset", "imdb", "--data-dir", "{tmp}"], "IMDB not found: expected the folders train/pos"),
    (["--dataset", "movielens", "--data-dir", "{tmp}"], "MovieLens not found"),
    # A params value of the wrong type (deepreduce.ParameterTypeError) was a traceback.
    (["--compressor", "qsgd", "--param", "quantum_num=many"], "quantum_num must be a number, got 'many'"),
    (["--compressor", "dgc", "--memory", "dgc", "--param", "gradient_clipping=yes"],
     "gradient_clipping must be True or False, got 'yes'"),
    # A model another data set's: the model's builder refused it in every worker.
    (["--model", "lstm"], "model 'lstm' trains on imdb, not 'digits'; leave out --model for digits's default, 'cnn'"),
    # The results are written after all the training: a folder that cannot be made failed then.
    (["--out", "{tmp}/a-file"], "--out='{tmp}/a-file': cannot make that folder (a file is in the way)"),
    # The transport and the world size were checked at the first step, in the workers.
    (["--param", "transport=bogus"], "transport must be a Transport or one of 'torch', 'mpi', 'local'; got 'bogus'"),
    (["--param", "world_size=7"], "params' world_size=7, but the run has 2 workers"),
    (["--compressor", "spardl", "--communicator", "allgather"],
     "--compressor spardl is SparDL's sparse all-reduce, communicator spardl: leave out communicator 'allgather'"),
])
def test_bad_training_settings_and_missing_data_exit_with_one_line_before_any_worker(argv, message, capsys,
                                                                                    tmp_path):
    """They were the optimizer's, NumPy's or a worker's tracebacks, after the workers had
    started."""
    (tmp_path / "a-file").touch()
    with pytest.raises(SystemExit) as e:
        main(["train", "--no-progress", *[a.format(tmp=tmp_path) for a in argv]])
    err = capsys.readouterr().err
    assert e.value.code == 2 and message.format(tmp=tmp_path) in err and "Traceback" not in err


@pytest.mark.parametrize("environ, message", [
    # Without MASTER_ADDR this ran a local 2-worker job, unsaid.
    ({"RANK": "1", "WORLD_SIZE": "4", "MASTER_PORT": "29533"},
     "RANK and WORLD_SIZE are set, as a torchrun-style launch sets them, but MASTER_ADDR is not"),
    ({"WORLD_SIZE": "4"}, "WORLD_SIZE is set, as a torchrun-style launch sets them, but RANK and MASTER_ADDR are not"),
    # RANK=2 of 2 waited out the rendezvous's 5 minutes; 'abc' was int()'s message.
    ({"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29533"},
     "RANK='2' and WORLD_SIZE='2': each must be a whole number, and RANK one of 0 .. WORLD_SIZE-1"),
    ({"RANK": "abc", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29533"}, "RANK='abc'"),
    # int()'s "invalid literal for int() with base 10: 'abc'", naming no variable
    ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "abc"},
     "MASTER_PORT='abc' must be a port number, 1 to 65535")])
def test_a_partial_or_inconsistent_launch_environment_is_one_line(environ, message, capsys, monkeypatch):
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(SystemExit) as e:
        main(["train", "--no-progress", "--epochs", "1"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and message in err and "Traceback" not in err


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "train" in capsys.readouterr().out


def test_the_python_api_refuses_yes_no_settings_given_as_strings():
    """``deepreduce.train.run(..., baseline='no')`` trained the baseline ('no' is true)."""
    from deepreduce import train
    for setting in ("baseline", "progress"):
        with pytest.raises(TypeError, match=f"{setting} must be True or False, got 'no'"):
            train.run({"compressor": "topk"}, **{setting: "no"})


@pytest.mark.parametrize("setting, bad, message", [
    # 'Step' and 'cosine' trained with no decay; a bad optimizer failed in the workers.
    ("lr_decay", "Step", "lr_decay='Step' is unknown; valid: none, step"),
    ("lr_decay", "cosine", "lr_decay='cosine' is unknown; valid: none, step"),
    ("optimizer", "adamw", "optimizer='adamw' is unknown; valid: sgd, adam"),
    ("epochs", "3", "epochs='3' must be a whole number >= 1"),
    ("batch_size", 8.5, "batch_size=8.5 must be a whole number >= 1")])
def test_the_python_api_refuses_settings_the_command_line_would(setting, bad, message):
    from deepreduce import train
    with pytest.raises(ValueError, match=re.escape(message)):
        train.run({"compressor": "topk"}, **{setting: bad})


def test_the_python_api_makes_its_out_folder_before_training(tmp_path):
    from deepreduce import train
    (tmp_path / "a-file").touch()
    with pytest.raises(ValueError, match="cannot make that folder \\(a file is in the way\\)"):
        train.run({"compressor": "topk"}, out=tmp_path / "a-file" / "run")


@pytest.mark.slow
def test_a_data_file_that_fails_in_the_workers_is_one_line(tmp_path):
    """The files are read in the workers: a truncated batch there came back as torch's
    ProcessRaisedException, two tracebacks and exit 1, where one worker in this process
    gave the one line and exit 2."""
    from test_data_loaders import write_cifar
    write_cifar(tmp_path / "cifar")
    batch = tmp_path / "cifar" / "data_batch_3"
    batch.write_bytes(batch.read_bytes()[:1000])
    out = subprocess.run([sys.executable, "-m", "deepreduce", "train", "--dataset", "cifar10", "--data-dir",
                          str(tmp_path / "cifar"), "--model", "cnn", "--epochs", "1", "--no-progress",
                          "--no-baseline", "--out", str(tmp_path / "out")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 2, out.stderr[-3000:]
    assert "Traceback" not in out.stderr
    assert out.stderr.splitlines()[-1].startswith("deepreduce train: error: ") and \
        "data_batch_3 is not a whole CIFAR-10 python batch" in out.stderr


@pytest.mark.parametrize("missing, command, message", [
    ("torch", "train", "deepreduce train trains with PyTorch, which is not installed: pip install 'deepreduce[train]'"),
    ("torch", "fl", "deepreduce fl trains with PyTorch, which is not installed: pip install 'deepreduce[train]'"),
    ("sklearn", "train", "dataset='digits' is the copy bundled with scikit-learn: pip install scikit-learn"),
])
def test_a_missing_extra_is_one_line_before_any_worker(missing, command, message):
    """`pip install deepreduce` alone has no torch: the commands died in an import's
    traceback. Without scikit-learn the digits set was missed only in the workers."""
    code = (f"import sys; sys.modules[{missing!r}] = None\n"  # what an absent package looks like to import
            "from deepreduce.cli import main\n"
            f"sys.exit(main([{command!r}]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert message in out.stderr.splitlines()[-1]
