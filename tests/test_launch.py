"""The embedded launcher's workers, forked from a fork server that has imported torch, behave
as freshly spawned processes would: they see the caller's environment and write to its
stdout/stderr as they are at the call, and a worker's exception reaches the caller."""
import os
import sys

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
