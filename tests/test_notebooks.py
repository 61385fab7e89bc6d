"""Every notebook under notebooks/ runs top to bottom: its code cells are executed in order
in a fresh interpreter (headless matplotlib), as Jupyter's "Run all" would. The code is
passed with ``-c`` so that, as in a kernel, ``__main__`` has no file for spawned workers
to re-import."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.name for n in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(notebook, tmp_path):
    pytest.importorskip("torch")
    cells = json.loads(notebook.read_text())["cells"]
    source = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    result = subprocess.run([sys.executable, "-c", source], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "top-k (raw)" in result.stdout and "setting" in result.stdout
