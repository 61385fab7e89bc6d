"""The embedded launcher's workers, forked from a fork server that has imported torch, behave
as freshly spawned processes would: they see the caller's environment and write to its
stdout/stderr as they are at the call, and a worker's exception reaches the caller."""
import os
import signal
import subprocess
import sys
import time

import pytest

from deepreduce.train.launch import context, spawn


def _report(rank, world_size, path):
    import torch.distributed as dist
    total = [float(rank + 1)]
    gathered = [None] * world_size
    dist.all_gather_object(gathered, total)
    with open(f"{path}.{rank}", "w") as f:
        f.write(f"{os.getppid()} {os.environ.get('DEEPREDUCE_LAUNCH_PROBE')} {gathered}\n")
    for name, stream in (("stdout", sys.stdout), ("stderr", sys.stderr)):
        stream.write(f"{name} of rank {rank}\n")  # one write: the ranks write at once
        stream.flush()


def _sleep(rank, world_size, folder):
    with open(os.path.join(folder, str(rank)), "w") as f:
        f.write(str(os.getpid()))
    time.sleep(600)


def _running(pid):
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _fail(rank, world_size):
    if rank == 1:
        raise ValueError("rank 1 refuses")


def _redirected(fd, path):
    """Point file descriptor ``fd`` at ``path`` until the context ends (as a test harness or
    a shell redirect would)."""
    class Redirect:
        def __enter__(self):
            self.saved = os.dup(fd)
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(target, fd)
            os.close(target)

        def __exit__(self, *exc):
            os.dup2(self.saved, fd)
            os.close(self.saved)
    return Redirect()


@pytest.mark.skipif(context().get_start_method() != "forkserver", reason="no fork server here")
def test_workers_take_the_callers_environment_and_streams_of_the_moment(tmp_path, monkeypatch):
    parents = []
    for call in ("first", "second"):
        monkeypatch.setenv("DEEPREDUCE_LAUNCH_PROBE", call)
        out, err = tmp_path / f"{call}.out", tmp_path / f"{call}.err"
        sys.stdout.flush()
        sys.stderr.flush()
        with _redirected(1, out), _redirected(2, err):
            spawn(_report, 2, (str(tmp_path / call),))
        for rank in range(2):
            parent, probe, gathered = (tmp_path / f"{call}.{rank}").read_text().split(" ", 2)
            assert probe == call and gathered.strip() == "[[1.0], [2.0]]"
            parents.append(int(parent))
        assert sorted(out.read_text().splitlines()) == ["stdout of rank 0", "stdout of rank 1"]
        assert sorted(line for line in err.read_text().splitlines()  # torch may warn there too
                      if "of rank" in line) == ["stderr of rank 0", "stderr of rank 1"]
    # forked by the one fork server, not started by this process
    assert len(set(parents)) == 1 and parents[0] != os.getpid()


def test_a_workers_exception_reaches_the_caller():
    with pytest.raises(Exception, match="rank 1 refuses"):
        spawn(_fail, 2, ())


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_the_workers_end_with_their_launcher(tmp_path, sig):
    """A signal to the launching process alone (Jupyter's interrupt, a container's stop)
    left its workers training to the end of the run: SIGINT and SIGTERM now stop them,
    and after SIGKILL, which nothing can catch, they end themselves."""
    tests = os.path.dirname(os.path.abspath(__file__))
    code = (f"from deepreduce.train.launch import spawn\nimport test_launch\n"
            f"spawn(test_launch._sleep, 2, ({str(tmp_path)!r},))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")]))
    launcher = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not all((tmp_path / str(rank)).exists() for rank in range(2)):
            assert time.monotonic() < deadline and launcher.poll() is None, "the workers did not start"
            time.sleep(0.1)
        time.sleep(0.2)  # both pid files written whole
        workers = [int((tmp_path / str(rank)).read_text()) for rank in range(2)]
        launcher.send_signal(sig)
        launcher.wait(timeout=30)
        deadline = time.monotonic() + 15
        while any(_running(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_running(pid) for pid in workers)
    finally:
        launcher.kill()
        for rank in range(2):
            pid_file = tmp_path / str(rank)
            if pid_file.exists() and pid_file.read_text() and _running(int(pid_file.read_text())):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
